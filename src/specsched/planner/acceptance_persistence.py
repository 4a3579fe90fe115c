"""How much of a request's measured acceptance is its own: the split-half reliability of tokens
per verify across a profile's acceptance requests.

A profile decodes each acceptance request for a few dozen tokens (~10-15 verifies at K = 5), so a
request's measured rate is its true rate plus sampling noise. The workload simulator draws each
simulated request's deviation from the profile's measured requests and then samples every verify
of it again (Bernoulli per position): replaying raw deviations counts the noise twice, and in a
wave, whose length is its slowest request's, the extra spread makes the simulated stragglers
slower than the measured ones (the B=4 demos' "steps part" 0.81-0.92, `notes/scripts/
prediction_anatomy.py`).

Each request's verifies are split into their first and second half; r is the correlation across
requests of the accepted tokens per verify in the two halves; the Spearman-Brown step gives the
reliability of the whole-output measure, R = 2r / (1 + r) (clipped to [0, 1]): the share of the
between-request variance that is the requests' own. A simulator that wants the population of true
rates scales measured deviations by sqrt(R), so their variance is R times the measured one
(`workload.request_acceptance`). A shift of the mean along the output (greedy text drifts into
repetition, `AcceptancePoint.by_output`) does not change a correlation.

Over a workload's first H output tokens (`AcceptancePoint.horizons`) a request has fewer verifies,
so more of its measured spread is noise: `horizon_persistence` splits the first H tokens at the
stored horizon nearest H / 2 and steps the halves' correlation up by the ratio of H to the
halves' geometric mean length (parts of unequal length; 2 for equal halves).
No torch here; numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from specsched.planner.acceptance_horizon import Snapshot, first_counts
from specsched.planner.profile import AcceptancePoint, HorizonCounts

MIN_REQUESTS = 8  # fewer requests: no estimate (a correlation of 4 pairs says little)
MIN_HALF_VERIFIES = 2  # a request with fewer verifies in a half is left out


def split_half_tokens(steps: Sequence[Snapshot]) -> tuple[float, float] | None:
    """One request's accepted tokens per verify in the first and the second half of its
    verifies, from its cumulative per-step snapshots; None when a half has too few verifies."""
    verifies = [int(d[0]) if len(d) else 0 for _, d, _ in steps]  # [steps] cumulative
    accepted = [float(sum(a)) for _, _, a in steps]  # [steps] cumulative
    if not verifies or verifies[-1] < 2 * MIN_HALF_VERIFIES:
        return None
    half = verifies[-1] / 2.0
    cut = next(i for i, v in enumerate(verifies) if v >= half)  # the step that reaches half
    v1, a1 = verifies[cut], accepted[cut]
    v2, a2 = verifies[-1] - v1, accepted[-1] - a1
    if v1 < MIN_HALF_VERIFIES or v2 < MIN_HALF_VERIFIES:
        return None
    return a1 / v1, a2 / v2


def persistence(snapshots: Sequence[Sequence[Snapshot]]) -> float | None:
    """R in [0, 1] (see module doc) over the requests' snapshots ([requests][steps]); None with
    fewer than MIN_REQUESTS usable requests or no spread in either half."""
    return reliability([p for p in (split_half_tokens(s) for s in snapshots) if p is not None])


def reliability(pairs: Sequence[tuple[float, float]], step_up: float = 2.0) -> float | None:
    """The whole measure's reliability from its two parts per request ([n] pairs): their
    correlation r stepped up by `step_up` = whole length / part length (Spearman-Brown,
    R = s r / (1 + (s - 1) r), clipped to [0, 1]); None with fewer than MIN_REQUESTS pairs or
    no spread in either part."""
    if len(pairs) < MIN_REQUESTS:
        return None
    halves = np.asarray(pairs, dtype=np.float64)  # [n, 2]
    if float(halves[:, 0].std()) == 0.0 or float(halves[:, 1].std()) == 0.0:
        return None
    r = max(float(np.corrcoef(halves[:, 0], halves[:, 1])[0, 1]), 0.0)
    return round(min(1.0, step_up * r / (1.0 + (step_up - 1.0) * r)), 6)


def _tokens_per_verify(h: HorizonCounts, k: int) -> tuple[np.ndarray, np.ndarray]:  # [n] each
    d = np.stack([first_counts(x, k) for x in h.drafted])  # [n, k]
    a = np.stack([first_counts(x, k) for x in h.accepted])  # [n, k]
    return d[:, 0], a.sum(axis=1)


def horizon_persistence(point: AcceptancePoint, h: HorizonCounts) -> float | None:
    """The reliability of the requests' tokens per verify over horizon `h`'s first tokens (see
    module doc); the point's whole-output `persistence` when h is its first stored horizon,
    the split leaves too few usable requests, or the horizons disagree on the requests."""
    earlier = [x for x in point.horizons if x.tokens < h.tokens]
    if not earlier or not h.drafted:
        return point.persistence
    first = min(earlier, key=lambda x: abs(math.log(x.tokens) - math.log(h.tokens / 2)))
    k = len(h.drafted[0])
    if len(first.drafted) != len(h.drafted):
        return point.persistence
    v_all, a_all = _tokens_per_verify(h, k)  # [n] cumulative over the first h.tokens
    v1, a1 = _tokens_per_verify(first, k)
    v2, a2 = v_all - v1, a_all - a1
    usable = (v1 >= MIN_HALF_VERIFIES) & (v2 >= MIN_HALF_VERIFIES)
    pairs = [(float(x1 / y1), float(x2 / y2))
             for x1, y1, x2, y2 in zip(a1[usable], v1[usable], a2[usable], v2[usable],
                                       strict=True)]
    step_up = h.tokens / math.sqrt(first.tokens * (h.tokens - first.tokens))
    got = reliability(pairs, step_up)
    return point.persistence if got is None else got
