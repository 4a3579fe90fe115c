"""Acceptance over a request's first H output tokens, and the uncertainty of the rate a workload
of such requests pools.

A profile decodes each acceptance request for its whole output (128 tokens by default). Greedy
text drifts into repetition, so over that length most requests accept nearly everything and the
requests look alike: a confidence interval over whole-output rates is narrow. A workload whose
outputs are short (the demo's 40 tokens, plan_eval's 48) sees the first tokens only, where
requests differ far more. `HorizonCounts` keeps each request's counts after its first H tokens
(every HORIZON_TOKENS tokens of the output), so an interval can be taken over the horizon the
workload reaches.

The rate a workload sees is pooled: Σ accepted / Σ drafted per position over its requests, so a
request that accepts little, and so verifies more often, weighs more. Its standard error is the
ratio estimator's (linearization, Cochran 1977 §6.4): for prefix position j,
    R_j = Σ_i a_ij / Σ_i d_ij,  se(R_j)^2 = Σ_i (a_ij - R_j d_ij)^2 / (n (n - 1) d̄_j^2),
with d̄_j the mean drafts per request. Forty 48-token texts at ctx 1900 give 4-12 % (BENCHMARKS,
fifty-second stop), where the unweighted mean of whole-output per-request rates said 2.6 %.
For a new sample of m requests (a benchmark cell, a workload's requests) the rate it will pool
falls around the profile's with se · sqrt(1 + n / m): the profile's sampling plus the sample's.
No torch here; numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from specsched.planner.profile import AcceptancePoint, HorizonCounts

HORIZON_TOKENS = 16  # generated tokens between two stored horizons

Snapshot = tuple[int, Sequence[int], Sequence[int]]  # (generated, drafted[], accepted[]) so far


def first_counts(values: Sequence[int], k: int) -> np.ndarray:  # [k], zero-padded
    out = np.zeros(k)
    n = min(k, len(values))
    out[:n] = np.asarray(values[:n], dtype=np.float64)
    return out


def _ints(values: Sequence[int], k: int) -> tuple[int, ...]:
    return tuple(int(x) for x in first_counts(values, k))


def horizon_counts(
    snapshots: Sequence[Sequence[Snapshot]],  # [num_requests][steps], cumulative after each step
    k: int,
    width: int = HORIZON_TOKENS,
) -> tuple[HorizonCounts, ...]:
    """Each request's cumulative counts after the first step that reached H generated tokens, for
    H = width, 2·width, .. below the longest output, and for the longest output itself (a request
    that stopped earlier contributes its final counts). () without requests or steps."""
    steps = [s for s in snapshots if s]
    if not steps:
        return ()
    longest = max(s[-1][0] for s in steps)
    if longest < 1:
        return ()
    horizons = [*range(width, longest, width), longest]
    out = []
    for h in horizons:
        at = [next((snap for snap in s if snap[0] >= h), s[-1]) for s in steps]
        out.append(HorizonCounts(h, tuple(_ints(d, k) for _, d, _ in at),
                                 tuple(_ints(a, k) for _, _, a in at)))
    return tuple(out)


def nearest_horizon(point: AcceptancePoint, tokens: int | None) -> HorizonCounts | None:
    """The stored horizon nearest `tokens` on a log scale (None: the whole output, the last);
    None when the point stores no horizons."""
    if not point.horizons:
        return None
    if tokens is None:
        return point.horizons[-1]
    t = max(tokens, 1)
    return min(point.horizons, key=lambda h: abs(math.log(h.tokens) - math.log(t)))


def drafting_counts(h: HorizonCounts, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(drafted [n, k], accepted [n, k]) of the requests that drafted every one of the first k
    positions by the horizon (a request that never drafted position j says nothing about it)."""
    if not h.drafted or len(h.drafted[0]) < k:
        return np.zeros((0, k)), np.zeros((0, k))
    d = np.asarray(h.drafted, dtype=np.float64)[:, :k]  # [n, k]
    a = np.asarray(h.accepted, dtype=np.float64)[:, :k]  # [n, k]
    keep = (d > 0).all(axis=1)
    return d[keep], a[keep]


def request_rates(h: HorizonCounts, k: int) -> np.ndarray:  # [n, k]
    """Each request's prefix rates over the horizon's first tokens (`drafting_counts`)."""
    d, a = drafting_counts(h, k)
    return np.minimum(a / d, 1.0) if len(d) else d


def pooled_rates(h: HorizonCounts, k: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(pooled prefix rates [k], their relative standard errors [k], requests used) over the
    requests that drafted every one of the first k positions (module doc)."""
    d, a = drafting_counts(h, k)
    n = len(d)
    if n < 2:
        return np.zeros(k), np.zeros(k), n
    rate = a.sum(axis=0) / d.sum(axis=0)  # [k]
    resid = a - rate * d  # [n, k]
    se = np.sqrt((resid**2).sum(axis=0) / (n * (n - 1))) / d.mean(axis=0)  # [k]
    rel = np.divide(se, rate, out=np.zeros(k), where=rate > 0)
    return rate, rel, n
