"""The adaptive policy's step costs per request and K: the online linear model's (`plane_costs`),
in the profile's shape where it has one (`shaped_costs`, `cost_shape`), and a step's features
scaled into that shape (`shaped_features`) so the online model learns the plane's level while
the shape stays the profile's; and the warm-up's K variation that gives a prior-less online model
more than one K to fit (`warmup_ks`). Pure functions; no torch.

Costs are (T at K = 0, seconds each request's k drafts add [n, max_k + 1], seconds per draft
step), all >= 0: a step of Ks K_i costs T0 + Σ_i table[i, K_i] + per_step·max K.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specsched.policy.cost import CTX_UNIT, OnlineStepCost, tile_passes
from specsched.policy.cost_shape import CostShape

Costs = tuple[float, np.ndarray, float]  # (T0, table [n, max_k + 1], per draft step)


def plane_costs(cost: OnlineStepCost, ctx: Sequence[int], max_k: int) -> Costs:
    """The online linear model's costs: c_i·k with c_i = d + e·ctx_i, plus h·ctx_i per extra
    attention tile."""
    theta = cost.theta
    base = cost.predict(cost.features(ctx, [0] * len(ctx)))
    c = np.asarray(ctx, dtype=np.float64) / CTX_UNIT  # [n]
    per_draft = np.maximum(theta[3] + theta[4] * c, 1e-7)  # [n]
    karr = np.arange(max_k + 1)  # [k]
    extra = tile_passes(karr, cost.q_tile)  # [k]
    table = per_draft[:, None] * karr[None, :] + np.maximum(theta[7], 0.0) * np.outer(c, extra)
    return base, table, max(float(theta[5]), 0.0)


def shaped_costs(plane: Costs, shape: CostShape | None, ctx: Sequence[int], max_k: int) -> Costs:
    """`plane` in the profile's shape: each uniform K's step T(k) = base + Σ_i C_i(k) + f·k
    scaled by the profile's measured / fitted s_k at this batch size and mean context (at
    B = 4 x ctx 512 the plane put K = 4 level with K = 2 where the steps measured K = 2 4.9 %
    better), the change beyond K = 0's (s_0 - 1)·base shared equally by the requests: a batch
    drafting one K costs the profile's step there, mixed Ks about it."""
    if shape is None:
        return plane
    base, table, per_step = plane
    n = len(ctx)
    s = shape.ratios(n, sum(ctx) // n, max_k)  # [k]
    uniform = base + table.sum(axis=0) + per_step * np.arange(max_k + 1)  # [k]
    extra = (s - 1.0) * uniform - (s[0] - 1.0) * base  # [k]; extra[0] = 0
    shaped = np.maximum(table + extra[None, :] / n, 0.0)  # [n, k]
    shaped[:, 0] = 0.0
    return float(s[0] * base), shaped, per_step


def shaped_features(x: np.ndarray, plane_seconds: float, plane: Costs, shaped: Costs,
                    ks: Sequence[int]) -> np.ndarray:  # [F]
    """A step's features x [F] (θ·x = plane_seconds) scaled so that θ·x is its time in the
    shape: the step's `shaped` cost less its `plane` cost, added to plane_seconds."""
    if plane is shaped or not len(ks) or plane_seconds <= 1e-6:
        return x
    max_k = plane[1].shape[1] - 1
    rows, k = np.arange(len(ks)), np.minimum(np.asarray(ks), max_k)
    delta = (shaped[0] - plane[0]) + float((shaped[1][rows, k] - plane[1][rows, k]).sum())
    return x * max(plane_seconds + delta, 1e-6) / plane_seconds


def ceiling_gain(costs: Costs) -> float:
    """The most any uniform K could gain over K = 0 if every draft were accepted: max over k of
    (k + 1)·T0 / T(k) (a subset of requests drafting gains less: the per-step term is shared).
    At B16 x ctx 512 on the AVX-512 EPYC a K = 1 step costs 1.99x a K = 0 one: <= 0.5 %."""
    base, table, per_step = costs
    k = np.arange(table.shape[1])  # [k]
    steps = base + table.sum(axis=0) + per_step * k  # [k]
    return float(((k + 1) * base / np.maximum(steps, 1e-12)).max())


def drafting_bound(costs: Costs) -> float:
    """An upper bound on the goodput over K = 0's of ANY K vector (per request, capped or not),
    every draft accepted: with r the most drafts per second any request's table buys (max over
    i, k of k / C_i(k)), S drafts in all cost at least S / r + f·S / n (max K >= the mean), and
    (n + S) / (T0 + S / r + f·S / n) is monotone in S, so its larger end bounds it. Where it is
    <= 1 + min_gain no choice can draft (`adaptive_choice.choose`): the policy skips the
    estimates (the K = 0 fast path: B16 x 512 on the AVX-512 EPYC, K = 1 1.99x a K = 0 step)."""
    base, table, per_step = costs
    n, width = table.shape
    if n == 0 or width < 2:
        return 1.0
    added = table[:, 1:]  # [n, max_k]
    if per_step < 0 or base <= 0 or (added <= 0).any():
        return float("inf")
    m = width - 1
    r = float((np.arange(1, width)[None, :] / added).max())
    return max(1.0, (1 + m) * base / (base + n * m / r + per_step * m))


def warmup_ks(anchor: np.ndarray, caps: np.ndarray, step: int, max_k: int) -> np.ndarray:  # [n]
    """K per request while the cost model has no prior and too few steps: the prior's
    (`anchor`), varied every 4th step so the regression sees more than one K."""
    if step % 4 == 3:
        shift = 1 if anchor.max() < max_k else -1
        return np.clip(anchor + shift, 0, caps)
    return anchor
