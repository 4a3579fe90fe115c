"""A profile as the adaptive policy's prior: the step cost model fitted to its timing points and
its acceptance per position by context (`policy.AdaptiveConfig.cost_prior / acceptance_prior`).

Every timing point (B requests at context c, static K) is one sample of the step cost model
(`policy.cost.step_features([c] * B, [K] * B)`, its median step time); the fit's relative residual
says how well the linear model describes the engine (`specsched plan` reports it).
No torch here.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from specsched.planner.profile import Profile
from specsched.policy import AdaptiveConfig
from specsched.policy.adaptive_trust import verified_depth
from specsched.policy.cost import StepCostModel, fit_step_cost, step_features


def fit_profile_cost(profile: Profile) -> StepCostModel:
    """The step cost model of a profile's timing points (seconds), with its profiled box and, per
    profiled (B, context), the deepest K its fit is right up to (the trust region's seed)."""
    if not profile.timings:
        raise ValueError("the profile has no timing points")
    xs = np.stack([step_features([t.ctx] * t.batch_size, [t.k] * t.batch_size)
                   for t in profile.timings])
    ys = np.array([t.t_step_ms.median / 1000.0 for t in profile.timings])
    fit = fit_step_cost(xs, ys)
    steps: dict[tuple[int, int], list[tuple[int, float, float]]] = {}
    for t, x, y in zip(profile.timings, xs, ys, strict=True):
        steps.setdefault((t.batch_size, t.ctx), []).append((t.k, float(y), fit.predict(x)))
    g = profile.grid
    return dataclasses.replace(
        fit, batch_range=(min(g.batch_sizes), max(g.batch_sizes)),
        ctx_range=(min(g.contexts), max(g.contexts)),
        verified_depths=tuple((b, c, verified_depth(s)) for (b, c), s in sorted(steps.items())))


def adaptive_prior(profile: Profile, base: AdaptiveConfig | None = None,
                   max_k: int | None = None) -> AdaptiveConfig:
    """`base` (default settings) with the profile's cost model and acceptance as priors; max_k
    defaults to the profile's largest K."""
    cfg = base or AdaptiveConfig()
    k = max_k if max_k is not None else max(profile.grid.ks[-1], 1)
    return dataclasses.replace(
        cfg,
        max_k=k,
        cost_prior=fit_profile_cost(profile),
        acceptance_prior=tuple((a.ctx, tuple(a.a)) for a in profile.acceptance),
    )
