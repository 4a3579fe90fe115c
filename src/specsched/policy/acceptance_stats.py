"""Online acceptance estimates: per-position conditional acceptance with counts and decay.

Per draft position j (0-based), a_j = P(draft j accepted | drafts 0..j-1 accepted). One verify of
a request that drafted n tokens and had a accepted *tested* positions 0..min(n-1, a) and accepted
positions 0..a-1 (position a, if < n, was tested and rejected; later ones were never tested):
the unbiased per-position estimator (Leviathan et al. 2023, arXiv:2211.17192, constant-a analysis
generalized per position). Counts decay (exponential forgetting) so a change of text — a
repetitive phase turning into free text — is followed within a few verifies; the posterior mean
shrinks toward a prior with `prior_weight` pseudo-observations, so a request with no history
behaves like its context bucket, and a bucket with no history like the profile.
No torch here; numpy only.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np


class AcceptanceCounts:
    """Decayed tested / accepted counts per draft position, [max_k] each."""

    __slots__ = ("accepted", "tested")

    def __init__(self, max_k: int) -> None:
        self.tested = np.zeros(max_k)  # [max_k]
        self.accepted = np.zeros(max_k)  # [max_k]

    def decay(self, factor: float) -> None:
        self.tested *= factor
        self.accepted *= factor

    def decay_beyond(self, num_drafted: int, factor: float) -> None:
        """Positions a verify did not draft (j >= num_drafted) age by `factor`: nothing refreshes
        them while K stays below them, and a few old rejections there would otherwise hold K
        down long after the text changed (the estimate drifts back to its shrinkage target, so
        the deeper K is tried again)."""
        n = max(0, min(num_drafted, len(self.tested)))
        self.tested[n:] *= factor
        self.accepted[n:] *= factor

    def add(self, num_drafted: int, num_accepted: int, weight: float = 1.0) -> None:
        """One verify: positions 0..min(n-1, a) tested, 0..a-1 accepted."""
        n = min(num_drafted, len(self.tested))
        a = min(num_accepted, n)
        self.tested[: min(n, a + 1)] += weight
        self.accepted[:a] += weight

    def merge(self, other: AcceptanceCounts) -> None:
        self.tested += other.tested
        self.accepted += other.accepted

    def posterior(self, prior: np.ndarray, prior_weight: float) -> np.ndarray:  # [max_k]
        """Posterior mean per position: (accepted + w·target) / (tested + w).

        Acceptance is correlated across positions (a draft that agrees at position 1 tends to
        agree later), and deep positions are tested only when drafted that deep: the target of
        positions j >= 1 is the prior tilted by how far position 0's posterior moved from its
        prior, in logit space. A request found to accept far better than its bucket is then
        expected to do so deeper too, and the policy tries longer drafts."""
        w = prior_weight
        post0 = (self.accepted[0] + w * prior[0]) / (self.tested[0] + w)
        shift = _logit(post0) - _logit(float(prior[0]))
        target = _sigmoid(_logit_array(prior) + shift)  # [max_k]
        target[0] = prior[0]
        return (self.accepted + w * target) / (self.tested + w)


EPS = 1e-3


def _logit(p: float) -> float:
    p = min(max(p, EPS), 1 - EPS)
    return float(np.log(p / (1 - p)))


def _logit_array(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, EPS, 1 - EPS)
    return np.log(q / (1 - q))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


# The most the CUSUM takes a request's first-position estimate to be. Near 1 one miss is nearly
# the whole threshold (at p0 = 0.98 a miss adds log(0.673 / 0.02) = 3.5 of h = 4): two misses
# of a text accepting ~0.94 read as a change, the slow counts restarted from a fast horizon of
# those misses, and the request's estimate fell 0.84 -> 0.48 -> 0.38; it drafted nothing for
# most of its 40 tokens while it accepted 1-3 of 3 in the 2-D arm, and finished alone (the
# demo's B4 x 512, 2026-12-06, seed 1, replicate 0). At 0.9 a miss adds 1.95 and an accept
# takes 1.1 off: three misses in a row are a change, two are not. (A/B on the engine, 12
# replicates each: 1.026 [0.997, 1.056] and 0.996 [0.939, 1.056] at B4 x 512, 0.997 [0.965,
# 1.030] at B1 x 512; the simulator's 24 scenarios 0.9774 vs 0.9771, its phases bench equal.)
CUSUM_P0_MAX = 0.9


class TwoHorizon:
    """A request's counts on two horizons: `slow` (long memory, low noise) is the estimate;
    `fast` (the last few verifies) is what the estimate restarts from when the text changes.

    Change detection is a two-sided CUSUM (Page 1954) on the first draft position's outcomes:
    against the current estimate p0, the alternatives p0/3 (a drop: repetitive text turned into
    free text) and 1 - (1 - p0)/3 (a rise); each verify adds the log-likelihood ratio of its
    outcome, and a sum above `h` (about three surprising verifies in a row) restarts `slow` from
    `fast`. In a steady state the sums drift down and false alarms are rare."""

    __slots__ = ("down", "fast", "rise", "slow")

    def __init__(self, max_k: int) -> None:
        self.slow = AcceptanceCounts(max_k)
        self.fast = AcceptanceCounts(max_k)
        self.down = 0.0
        self.rise = 0.0

    def add(self, num_drafted: int, num_accepted: int, slow_decay: float,
            fast_decay: float) -> None:
        self.slow.decay(slow_decay)
        self.fast.decay(fast_decay)
        self.slow.add(num_drafted, num_accepted)
        self.fast.add(num_drafted, num_accepted)

    def changed(self, p0: float, accepted_first: bool, h: float) -> bool:
        """Feed one verify's first-position outcome under estimate p0; True (and the slow
        counts restarted from the fast ones) when a change is detected."""
        p0 = min(max(p0, 0.02), CUSUM_P0_MAX)
        lo, hi = p0 / 3.0, 1.0 - (1.0 - p0) / 3.0
        if accepted_first:
            self.down = max(0.0, self.down + float(np.log(lo / p0)))
            self.rise = max(0.0, self.rise + float(np.log(hi / p0)))
        else:
            self.down = max(0.0, self.down + float(np.log((1 - lo) / (1 - p0))))
            self.rise = max(0.0, self.rise + float(np.log((1 - hi) / (1 - p0))))
        if max(self.down, self.rise) <= h:
            return False
        self.down = self.rise = 0.0
        self.slow.tested[:] = self.fast.tested
        self.slow.accepted[:] = self.fast.accepted
        return True


def posterior_batch(
    tested: np.ndarray,  # [n, max_k]
    accepted: np.ndarray,  # [n, max_k]
    prior: np.ndarray,  # [n, max_k]
    prior_weight: float,
) -> np.ndarray:  # [n, max_k]
    """`AcceptanceCounts.posterior` for n requests at once (same rule, vectorized)."""
    w = prior_weight
    post0 = (accepted[:, 0] + w * prior[:, 0]) / (tested[:, 0] + w)  # [n]
    shift = _logit_array(post0) - _logit_array(prior[:, 0])  # [n]
    target = _sigmoid(_logit_array(prior) + shift[:, None])  # [n, max_k]
    target[:, 0] = prior[:, 0]
    return (accepted + w * target) / (tested + w)


def shrinkage_weight(counts: Sequence[AcceptanceCounts], default: float,
                     lo: float = 1.0, hi: float = 30.0) -> float:
    """How many pseudo-verifies a request's estimate borrows from its bucket, from how much the
    requests at hand really differ (empirical Bayes, beta-binomial method of moments): the
    spread of their first-position rates beyond what binomial noise explains is tau^2, and the
    weight is p(1-p) / tau^2 — alike requests pool strongly (little noise), a straggler among
    requests that accept well keeps its own estimate. `default` when too few have evidence."""
    rates: list[float] = []
    ns: list[float] = []
    for c in counts:
        tested = float(c.tested[0])
        if tested >= 2.0:
            rates.append(float(c.accepted[0]) / tested)
            ns.append(tested)
    if len(rates) < 3:
        return default
    r, w = np.asarray(rates), np.asarray(ns)
    p = float(np.average(r, weights=w))
    noise = float(np.mean(p * (1 - p) / w))
    tau2 = float(np.var(r)) - noise
    if tau2 <= 1e-6:
        return hi
    return float(np.clip(p * (1 - p) / tau2, lo, hi))


def prior_for_context(
    points: Sequence[tuple[int, Sequence[float]]],  # (ctx, a_1..a_K) measured per context
    ctx: int,
    max_k: int,
    default: float = 0.6,
) -> np.ndarray:  # [max_k]
    """Acceptance per position at `ctx`, linear in log context between measured points (held
    constant beyond them); positions past a point's K repeat its last value; no points: default."""
    if not points:
        return np.full(max_k, default)

    def padded(a: Sequence[float]) -> np.ndarray:
        out = np.full(max_k, float(a[-1]) if len(a) else default)
        out[: min(len(a), max_k)] = np.asarray(a[:max_k], dtype=float)
        return out

    pts = sorted(points, key=lambda p: p[0])
    if ctx <= pts[0][0]:
        return padded(pts[0][1])
    if ctx >= pts[-1][0]:
        return padded(pts[-1][1])
    for (c0, a0), (c1, a1) in itertools.pairwise(pts):
        if c0 <= ctx <= c1:
            t = (np.log(ctx) - np.log(c0)) / (np.log(c1) - np.log(c0))
            return (1 - t) * padded(a0) + t * padded(a1)
    raise AssertionError("unreachable")


def expected_tokens_table(a: np.ndarray) -> np.ndarray:  # [n, max_k] -> [n, max_k + 1]
    """E[tokens | K = k] = 1 + Σ_{j<k} Π_{l<=j} a_l per request: accepted drafts + the
    recovered/bonus token (k = 0: plain decoding, 1 token)."""
    prefix = np.cumprod(a, axis=-1)  # [n, max_k]: P(first j+1 accepted)
    out = np.ones((a.shape[0], a.shape[1] + 1))
    out[:, 1:] += np.cumsum(prefix, axis=-1)
    return out
