"""Acceptance measured per request: its mean, spread and confidence interval, and the lower bound
the planner bets on.

A request that drafted position j `drafted[j]` times and had it accepted `accepted[j]` times has
prefix rates r_j = accepted[j] / drafted[j] (P(the first j+1 drafts accepted), vLLM's
per-position rate). Its tokens per verify at K are 1 + Σ_{j<K} r_j, linear in r, so the mean over
requests is taken of prefix rates (E over requests of tokens per step = 1 + Σ mean r) and
converted to conditional rates a_j = r_j / r_{j-1} once (`conditional_from_prefix_rates`).

- spread: standard deviation across requests (what a workload simulation draws requests from);
- confidence interval of the mean: percentile bootstrap over requests (Efron & Tibshirani 1993),
  requests resampled with replacement, seeded;
- planning bound: the `quantile` of the mean's sampling distribution, mean + t_q · se per prefix
  position (Student t, n - 1 degrees of freedom). quantile 0.1 is a one-sided 90% lower
  confidence bound: a gain that holds only at the mean is not bet on. se is the pooled rate's
  over the workload's output horizon where the profile stores per-request counts along the
  output (`planner.acceptance_horizon`: short outputs differ far more than whole ones), else
  s / sqrt(n) over the per-request rates. Profiles without per-request data fall back to the
  binomial standard error of pooled rates (n drafts; it ignores how requests differ, so it is
  optimistic), and assumed rates (n = 0) have no uncertainty.
No torch here; numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from specsched.planner.acceptance import conditional_from_prefix_rates
from specsched.planner.acceptance_horizon import (
    Snapshot,
    first_counts,
    nearest_horizon,
    pooled_rates,
)
from specsched.planner.profile import AcceptancePoint, OutputSegment

BOOTSTRAP_RESAMPLES = 2000


def t_quantile(q: float, dof: int) -> float:
    """Quantile q of Student's t with `dof` degrees of freedom (Cornish-Fisher expansion around
    the normal quantile; within ~1% of the exact value for dof >= 3 and 0.01 <= q <= 0.99)."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"quantile must be in (0, 1), got {q}")
    z = NormalDist().inv_cdf(q)
    if dof <= 0:
        return z
    v = float(dof)
    return (z + (z**3 + z) / (4 * v) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3))


def _prefix(a: Sequence[float]) -> np.ndarray:  # conditional [K] -> prefix [K]
    return np.cumprod(np.asarray(a, dtype=np.float64))


def _conditional(prefix: np.ndarray) -> tuple[float, ...]:
    return tuple(round(x, 6) for x in conditional_from_prefix_rates(prefix.tolist()))


def request_prefix_rates(
    drafted: Sequence[Sequence[int]],  # [num_requests][positions] drafts per position
    accepted: Sequence[Sequence[int]],  # [num_requests][positions] accepted per position
    k: int,
) -> np.ndarray:  # [n, k]
    """Prefix rates of the requests that drafted every one of the first k positions at least
    once (a request that never drafted position j says nothing about it)."""
    rows = []
    for d, a in zip(drafted, accepted, strict=True):
        if len(d) >= k and len(a) >= k and all(d[j] > 0 for j in range(k)):
            rows.append([min(a[j] / d[j], 1.0) for j in range(k)])
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), k)


def summarize_requests(
    ctx: int,
    drafted: Sequence[Sequence[int]],
    accepted: Sequence[Sequence[int]],
    k: int,
    level: float = 0.95,
    seed: int = 0,
) -> AcceptancePoint:
    """An `AcceptancePoint` with per-request statistics (see module doc); needs >= 2 requests
    that drafted all k positions. `n` = verify steps (drafts of position 1) over all requests."""
    rates = request_prefix_rates(drafted, accepted, k)  # [n, k]
    n = len(rates)
    if n < 2:
        raise ValueError(f"acceptance at ctx {ctx}: {n} request(s) drafted {k} positions; "
                         f"need >= 2 for a spread and a confidence interval")
    mean = rates.mean(axis=0)  # [k]
    per_request = [_conditional(r) for r in rates]
    spread = np.asarray(per_request).std(axis=0, ddof=1)  # [k], conditional rates
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(BOOTSTRAP_RESAMPLES, n))  # [R, n]
    boot = rates[idx].mean(axis=1)  # [R, k]
    alpha = (1.0 - level) / 2
    lo, hi = np.quantile(boot, [alpha, 1.0 - alpha], axis=0)  # [k] each
    verifies = int(sum(d[0] for d in drafted if len(d) > 0))
    return AcceptancePoint(
        ctx, _conditional(mean), verifies, n,
        spread=tuple(round(float(s), 6) for s in np.clip(spread, 0.0, 1.0)),
        ci_lo=_conditional(np.minimum(lo, mean)), ci_hi=_conditional(np.maximum(hi, mean)),
        ci_level=level, requests=tuple(per_request),
    )


SEGMENT_TOKENS = 32  # generated tokens per `by_output` segment
MIN_SEGMENT_VERIFIES = 8  # a thinner segment (at any position) joins the one before it


def output_segments(
    snapshots: Sequence[Sequence[Snapshot]],  # [num_requests][steps], cumulative after each step
    k: int,
    width: int = SEGMENT_TOKENS,
) -> tuple[OutputSegment, ...]:
    """Acceptance along the output (`AcceptancePoint.by_output`): each step's drafts go to the
    segment of the tokens its request had generated before it; per segment the drafts of all
    requests are pooled (prefix rate = accepted / drafted per position). Segments with fewer
    than MIN_SEGMENT_VERIFIES drafts at some position merge into the previous one; () when
    fewer than two segments remain (nothing beyond the point's mean)."""
    drafted: dict[int, np.ndarray] = {}  # segment start -> [k]
    accepted: dict[int, np.ndarray] = {}
    for steps in snapshots:
        prev_g, prev_d, prev_a = 0, np.zeros(k), np.zeros(k)
        for g, step_d, step_a in steps:
            cur_d, cur_a = first_counts(step_d, k), first_counts(step_a, k)
            start = prev_g // width * width
            drafted[start] = drafted.get(start, np.zeros(k)) + cur_d - prev_d
            accepted[start] = accepted.get(start, np.zeros(k)) + cur_a - prev_a
            prev_g, prev_d, prev_a = g, cur_d, cur_a
    merged: list[tuple[int, np.ndarray, np.ndarray]] = []  # (start, drafted[k], accepted[k])
    for start in sorted(drafted):
        if merged and drafted[start].min() < MIN_SEGMENT_VERIFIES:
            first, md, ma = merged[-1]
            merged[-1] = (first, md + drafted[start], ma + accepted[start])
        else:
            merged.append((start, drafted[start], accepted[start]))
    if len(merged) > 1 and merged[0][1].min() < MIN_SEGMENT_VERIFIES:
        _, md, ma = merged.pop(1)
        merged[0] = (0, merged[0][1] + md, merged[0][2] + ma)
    if len(merged) < 2 or merged[0][1].min() < MIN_SEGMENT_VERIFIES:
        return ()
    return tuple(OutputSegment(0 if i == 0 else int(start), int(md[0]),
                               _conditional(np.minimum(ma / md, 1.0)))
                 for i, (start, md, ma) in enumerate(merged))


def acceptance_bound(point: AcceptancePoint, quantile: float, horizon: int | None = None,
                     sample: int | None = None) -> tuple[float, ...]:
    """Conditional acceptance per position at `quantile` (0.5: the mean itself) of the sampling
    distribution of the mean, or with `sample` = m of the rate m new requests will show (the
    profile's se times sqrt(1 + n / m)). A point that stores per-request counts along the
    output (`horizons`) is bounded by the pooled rate's se over the first `horizon` generated
    tokens (None: the whole output; `planner.acceptance_horizon`), relative to the mean;
    otherwise by the three cases of the module doc."""
    if not 0.0 < quantile < 1.0:
        raise ValueError(f"acceptance quantile must be in (0, 1), got {quantile}")
    if sample is not None and sample < 1:
        raise ValueError(f"acceptance sample must be >= 1 request, got {sample}")
    if quantile == 0.5:
        return tuple(point.a)
    center = _prefix(point.a)  # [k]
    k = len(center)
    counts = nearest_horizon(point, horizon)
    pooled = pooled_rates(counts, k) if counts is not None else None
    if pooled is not None and pooled[2] >= 2:
        _, rel, n = pooled
        se = center * rel  # [k]
        t = t_quantile(quantile, n - 1)
    elif len(point.requests) >= 2:
        rates = np.stack([_prefix(r) for r in point.requests])  # [n, k]
        n = len(rates)
        se = rates.std(axis=0, ddof=1) / math.sqrt(n)
        t = t_quantile(quantile, n - 1)
    elif point.n > 0:
        se = np.sqrt(center * (1.0 - center) / point.n)
        t = NormalDist().inv_cdf(quantile)
        n = point.num_requests  # se counts drafts; a sample counts requests (0: unknown)
    else:
        return tuple(point.a)
    if sample is not None and n > 0:
        se = se * math.sqrt(1.0 + n / sample)
    bound = np.clip(center + t * se, 0.0, 1.0)
    return _conditional(bound)


def bound_points(
    points: Sequence[AcceptancePoint], quantile: float, horizon: int | None = None,
    sample: int | None = None,
) -> tuple[tuple[int, tuple[float, ...]], ...]:
    """(ctx, conditional rates at `quantile`) per measured context (`acceptance_bound`)."""
    return tuple((p.ctx, acceptance_bound(p, quantile, horizon, sample)) for p in points)
