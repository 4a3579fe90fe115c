"""A profile as the adaptive policy's prior: the step cost model fitted to its timing points and
its acceptance per position by context (`policy.AdaptiveConfig.cost_prior / acceptance_prior`).

Every timing point (B requests at context c, static K) is one sample of the step cost model
(`policy.cost.step_features([c] * B, [K] * B)`, its median step time); the fit's relative residual
says how well the linear model describes the engine (`specsched plan` reports it). The attention
tile term (`policy.cost`, h) takes the tile size the engine reported (`ProfileMetadata.
attention_q_tile`); a profile without one (older, imported, hand-written) gets it only where its
data asks for it: every tile size whose first extra pass lies inside the profiled Ks is fitted
and the best kept when it explains the profile clearly better than no tile term (a BIC-style test:
N·ln(RSS_tile / RSS_none) below -TILE_EVIDENCE·ln N). What the plane misses at each profiled
point (measured / fitted) goes with it (`policy.cost_shape`): the policy's costs are the
profile's own where it measured.
No torch here.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from specsched.planner.profile import Profile
from specsched.policy import AdaptiveConfig
from specsched.policy.adaptive_trust import verified_depth
from specsched.policy.cost import StepCostModel, fit_step_cost, step_features
from specsched.policy.cost_shape import CostShape

TILE_EVIDENCE = 2.0  # x ln N: how much better a tile term must fit to be kept


def _fit(profile: Profile, ys: np.ndarray, q_tile: int | None
         ) -> tuple[StepCostModel, np.ndarray]:
    """(model, features [N, F]) for one tile size; ys [N] the profile's step seconds."""
    xs = np.stack([step_features([t.ctx] * t.batch_size, [t.k] * t.batch_size, 0, q_tile)
                   for t in profile.timings])  # [N, F]
    return dataclasses.replace(fit_step_cost(xs, ys), q_tile=q_tile), xs


def fit_profile_cost(profile: Profile) -> StepCostModel:
    """The step cost model of a profile's timing points (seconds), with its profiled box, the
    attention tile term where the data shows one (module doc) and, per profiled (B, context), the
    deepest K its fit is right up to (the trust region's seed)."""
    if not profile.timings:
        raise ValueError("the profile has no timing points")
    ys = np.array([t.t_step_ms.median / 1000.0 for t in profile.timings])  # [N]
    known = profile.metadata.attention_q_tile
    fit, xs = _fit(profile, ys, known)
    if known is None and profile.grid.ks[-1] >= 2:  # first extra pass at K = q
        best = min((_fit(profile, ys, q) for q in range(2, profile.grid.ks[-1] + 1)),
                   key=lambda f: f[0].rel_rmse)
        # RSS = N * rel_rmse^2, so N ln(RSS ratio) = 2 N ln(rel_rmse ratio)
        n = len(ys)
        if fit.rel_rmse > 0 and (best[0].rel_rmse <= 0 or 2 * n * math.log(
                best[0].rel_rmse / fit.rel_rmse) < -TILE_EVIDENCE * math.log(n)):
            fit, xs = best
    steps: dict[tuple[int, int], list[tuple[int, float, float]]] = {}
    for t, x, y in zip(profile.timings, xs, ys, strict=True):
        steps.setdefault((t.batch_size, t.ctx), []).append((t.k, float(y), fit.plane(x)))
    g = profile.grid
    return dataclasses.replace(
        fit, batch_range=(min(g.batch_sizes), max(g.batch_sizes)),
        ctx_range=(min(g.contexts), max(g.contexts)),
        verified_depths=tuple((b, c, verified_depth(s)) for (b, c), s in sorted(steps.items())),
        shape=CostShape.from_points([(b, c, k, y / fitted) for (b, c), s in steps.items()
                                     for k, y, fitted in s]))


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
