"""Each simulated request's acceptance: drawn from the profile's measured requests at the
context nearest its prompt, over the first tokens its output reaches (`request_acceptance`), and
laid along its output as the profile's requests accepted along theirs (`output_phases`).
No torch here; numpy only.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np

from specsched.planner.acceptance import conditional_from_prefix_rates
from specsched.planner.acceptance_ci import bound_points
from specsched.planner.acceptance_horizon import nearest_horizon, request_rates
from specsched.planner.acceptance_persistence import horizon_persistence
from specsched.planner.profile import AcceptancePoint, Profile
from specsched.planner.simulate import Phases
from specsched.policy.acceptance_stats import prior_for_context


def _nearest(points: Sequence[AcceptancePoint], ctx: int) -> AcceptancePoint:
    """The measured context nearest `ctx` on a log scale."""
    return min(points, key=lambda p: abs(math.log(p.ctx) - math.log(ctx)))


def _deviations(point: AcceptancePoint) -> np.ndarray:  # [n, k] prefix-rate deviations
    mean = np.cumprod(np.asarray(point.a))
    return np.stack([np.cumprod(np.asarray(r)) - mean for r in point.requests])


def request_acceptance(profile: Profile, ctx: int, spread: float | None, rng: random.Random,
                       quantile: float = 0.5, horizon: int | None = None,
                       sample: int | None = None) -> tuple[float, ...]:
    """One request's conditional acceptance per position at `ctx`: the profile's rates (at
    `quantile` over the first `horizon` output tokens, for a `sample` of that many requests
    where given: `acceptance_bound`; linear in log ctx), moved by a measured request of the
    nearest measured context, or by spread·z (z ~ N(0, 1)) where `spread` is given.

    A point that stores `horizons` lends a measured request's own prefix rates over the stored
    horizon nearest `horizon` (None: the whole output), shrunk toward their mean by the square
    root of that horizon's persistence (`horizon_persistence`: the deviation's own part, not
    its sampling noise) and scaled by the bound at `ctx` over the point's own mean: short
    outputs differ far more than whole ones, and a simulation of such requests pools what
    the profile's requests pooled. Without horizons: the request's whole-output deviation
    from the mean, times the square root of the point's `persistence` where measured."""
    max_k = max(profile.grid.ks[-1], 1)
    points = profile.acceptance
    if not points:
        return ()
    bounds = bound_points(points, quantile, horizon, sample)
    mean = prior_for_context(bounds, ctx, max_k)  # [max_k] conditional
    if spread is not None:
        return tuple(float(x) for x in np.clip(mean + spread * rng.gauss(0.0, 1.0), 0.0, 1.0))
    near = _nearest(points, ctx)
    h = nearest_horizon(near, horizon)
    rates = request_rates(h, len(near.a)) if h is not None else np.zeros((0, 0))  # [n, k]
    if len(rates) >= 2:
        u = rates.mean(axis=0)  # [k]
        shrink = horizon_persistence(near, h) if h is not None else None
        r = rates[rng.randrange(len(rates))]  # [k]
        if shrink is not None:
            r = u + math.sqrt(shrink) * (r - u)
        own = np.cumprod(np.asarray(near.a))  # [k] the point's mean prefix rates
        scale = np.divide(np.cumprod(mean)[: len(own)], own, out=np.ones(len(own)),
                          where=own > 0)  # [k]
        dev = np.pad(r * scale, (0, max(0, max_k - len(r))), mode="edge")[:max_k]
        return conditional_from_prefix_rates(np.clip(dev, 0.0, 1.0).tolist())
    if len(near.requests) < 2:
        return tuple(float(x) for x in mean)
    dev = _deviations(near)[rng.randrange(len(near.requests))]  # [k]
    if near.persistence is not None:
        dev = dev * math.sqrt(near.persistence)
    dev = np.pad(dev, (0, max(0, max_k - len(dev))), mode="edge")[:max_k]
    prefix = np.clip(np.cumprod(mean) + dev, 0.0, 1.0)
    return conditional_from_prefix_rates(prefix.tolist())


def _segment_weights(near: AcceptancePoint, horizon: int | None) -> np.ndarray:  # [S]
    """Each `by_output` segment's verifies; with a `horizon` on a point that stores horizons,
    only the part of each segment before it (a request drawn over its first `horizon` tokens
    carries their mean, not the whole output's)."""
    weights = np.asarray([g.verifies for g in near.by_output], dtype=np.float64)  # [S]
    if horizon is None or not near.horizons:
        return weights
    starts = [g.start for g in near.by_output]
    ends = [*starts[1:], max(near.horizons[-1].tokens, starts[-1] + 1)]
    inside = [min(max((horizon - s) / (e - s), 0.0), 1.0) for s, e in zip(starts, ends,
                                                                         strict=True)]
    return weights * np.asarray(inside)


def output_phases(profile: Profile, ctx: int, a: tuple[float, ...],
                  horizon: int | None = None) -> Phases:
    """A request's acceptance `a` (its mean over the profile's output length, or over its first
    `horizon` tokens where the profile stores horizons: `request_acceptance`) along its output:
    per `by_output` segment of the nearest measured context, its prefix rates scaled by the
    segment's over the segments' verify-weighted mean (`_segment_weights`); ((0, a),) without
    segments."""
    points = [p for p in profile.acceptance if p.by_output]
    if not a or not points:
        return ((0, a),)
    near = _nearest(points, ctx)
    k = min(len(a), len(near.a))
    seg_prefix = np.stack([np.cumprod(np.asarray(g.a[:k])) for g in near.by_output])  # [S, k]
    weights = _segment_weights(near, horizon)  # [S]
    if weights.sum() <= 0:
        weights = np.asarray([g.verifies for g in near.by_output], dtype=np.float64)
    ref = weights @ seg_prefix / weights.sum()  # [k]
    base = np.cumprod(np.asarray(a[:k]))  # [k]
    phases = []
    for g, prefix in zip(near.by_output, seg_prefix, strict=True):
        scale = np.divide(prefix, ref, out=np.ones(k), where=ref > 0)  # [k]
        rates = conditional_from_prefix_rates(np.clip(base * scale, 0.0, 1.0).tolist())
        phases.append((g.start, rates + tuple(a[k:])))
    return tuple(phases)
