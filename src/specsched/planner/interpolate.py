"""The planner's cost model: step time T(B, ctx, K) and acceptance per position at ctx.

Step time comes from the parametric model fitted to the whole profile, in the profile's shape
(`CostKind.FIT`, the default; `planner.cost_fit`: a profiled point's own step, the plane's growth
between points) or, as a fallback, from the profiled points: bilinear in batch size
and log(context) (`CostKind.INTERPOLATE`). Acceptance is linear in log(context) between measured
contexts, taken at a quantile of its mean's sampling distribution (`acceptance_ci`; 0.5 = the
mean, 0.1 = a 90% lower confidence bound).

Never extrapolates silently: outside the profiled (B, ctx) box a lookup either raises a
`UserError` (`Extrapolation.ERROR`, the default) or is allowed and says so in the result
(`Extrapolation.CLAMP`, `extrapolated=True`): the fitted model is evaluated there, interpolation
clamps to the nearest edge, acceptance is held at its edge. K is never interpolated: only
profiled K exist.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

import numpy as np

from specsched.errors import UserError
from specsched.planner.acceptance import expected_tokens, goodput
from specsched.planner.acceptance_ci import acceptance_bound
from specsched.planner.cost_fit import CostFit, fit_cost
from specsched.planner.profile import Profile


class Extrapolation(str, Enum):
    ERROR = "error"
    CLAMP = "clamp"  # allowed and flagged (fit: the model's value; interpolation: the edge's)


class CostKind(str, Enum):
    AUTO = "auto"  # FIT, unless the fit is poor (`cost_fit.POOR_FIT_RMS`): then INTERPOLATE
    FIT = "fit"  # the parametric step cost model fitted to the profile, in its shape (`cost_fit`)
    INTERPOLATE = "interpolate"  # bilinear in (B, log ctx) between profiled points


class Lookup(NamedTuple):
    value: float
    extrapolated: bool


class _Bracket(NamedTuple):
    i0: int
    i1: int
    w: float  # weight of i1
    outside: bool


def _bracket(
    axis: tuple[int, ...], x: float, log: bool, what: str, policy: Extrapolation
) -> _Bracket:
    """Neighbours of x on a sorted axis and the interpolation weight (in log space if `log`)."""
    lo, hi = axis[0], axis[-1]
    outside = x < lo or x > hi
    if outside:
        if policy is Extrapolation.ERROR:
            raise UserError(
                f"{what} {x:g} is outside the profiled range [{lo}, {hi}]; profile it, or allow "
                f"clamping to the edge (--allow-extrapolation; such cells are flagged)"
            )
        x = min(max(x, lo), hi)
    j = int(np.searchsorted(axis, x, side="right")) - 1
    j = min(max(j, 0), len(axis) - 1)
    if j == len(axis) - 1 or axis[j] == x:
        return _Bracket(j, j, 0.0, outside)
    x0, x1 = axis[j], axis[j + 1]
    if log:
        w = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
    else:
        w = (x - x0) / (x1 - x0)
    return _Bracket(j, j + 1, w, outside)


@dataclass(frozen=True, slots=True)
class CostModel:
    """A complete profile read for planning. t_step[k_index, batch_index, ctx_index] in ms (the
    profiled points); fit: the fitted step cost model and its residuals; acc[ctx_index_of_
    acceptance, position]: conditional acceptance at `acceptance_quantile`."""

    profile: Profile
    t_step: np.ndarray  # [num_k, num_batch, num_ctx]
    acc_ctx: tuple[int, ...]
    acc: np.ndarray  # [num_acc_ctx, max_k] (max_k >= 1) or [0, 0]
    kind: CostKind = CostKind.INTERPOLATE
    fit: CostFit | None = None
    acceptance_quantile: float = 0.5

    @classmethod
    def from_profile(cls, profile: Profile, kind: CostKind = CostKind.AUTO,
                     acceptance_quantile: float = 0.5) -> CostModel:
        """Step time by `kind`; acceptance at `acceptance_quantile` (0.5: the mean)."""
        profile.require_plannable()
        fit = fit_cost(profile)
        if kind is CostKind.AUTO:
            kind = CostKind.INTERPOLATE if fit.is_poor else CostKind.FIT
        if not 0.0 < acceptance_quantile < 1.0:
            raise UserError(f"--acceptance-quantile must be in (0, 1), got {acceptance_quantile}")
        g = profile.grid
        t = np.zeros((len(g.ks), len(g.batch_sizes), len(g.contexts)))
        kx = {k: i for i, k in enumerate(g.ks)}
        bx = {b: i for i, b in enumerate(g.batch_sizes)}
        cx = {c: i for i, c in enumerate(g.contexts)}
        for p in profile.timings:
            t[kx[p.k], bx[p.batch_size], cx[p.ctx]] = p.t_step_ms.median
        max_k = g.ks[-1]
        acc = (np.array([acceptance_bound(a, acceptance_quantile)[:max_k]
                         for a in profile.acceptance])
               if max_k > 0 else np.zeros((0, 0)))
        return cls(profile, t, tuple(a.ctx for a in profile.acceptance), acc, kind,
                   fit, acceptance_quantile)

    @property
    def ks(self) -> tuple[int, ...]:
        return self.profile.grid.ks

    def step_time_ms(
        self, batch_size: int, ctx: int, k: int, policy: Extrapolation = Extrapolation.ERROR
    ) -> Lookup:
        """T(B, ctx, K): the fitted model, or bilinear in (B, log ctx) between the four
        surrounding profiled points (`kind`)."""
        g = self.profile.grid
        if k not in g.ks:
            raise UserError(f"K={k} was not profiled (profiled K: {list(g.ks)})")
        ki = g.ks.index(k)
        bb = _bracket(g.batch_sizes, batch_size, False, "batch size", policy)
        cb = _bracket(g.contexts, ctx, True, "context", policy)
        if self.kind is CostKind.FIT and self.fit is not None:
            return Lookup(self.fit.step_ms(batch_size, ctx, k), bb.outside or cb.outside)
        t = self.t_step[ki]
        top = (1 - cb.w) * t[bb.i0, cb.i0] + cb.w * t[bb.i0, cb.i1]
        bot = (1 - cb.w) * t[bb.i1, cb.i0] + cb.w * t[bb.i1, cb.i1]
        return Lookup(float((1 - bb.w) * top + bb.w * bot), bb.outside or cb.outside)

    def acceptance(
        self, ctx: int, policy: Extrapolation = Extrapolation.ERROR
    ) -> tuple[tuple[float, ...], bool]:
        """Conditional acceptance per position at ctx, linear in log ctx between measured ones."""
        if self.acc.size == 0:
            return (), False
        cb = _bracket(self.acc_ctx, ctx, True, "context (acceptance)", policy)
        a = (1 - cb.w) * self.acc[cb.i0] + cb.w * self.acc[cb.i1]  # [max_k]
        return tuple(float(x) for x in a), cb.outside

    def goodput(
        self, batch_size: int, ctx: int, k: int, policy: Extrapolation = Extrapolation.ERROR
    ) -> Lookup:
        """Goodput(B, ctx, K) = B x E[tokens/step | K, ctx] / T(B, ctx, K), tokens/s."""
        t = self.step_time_ms(batch_size, ctx, k, policy)
        if k == 0:
            return Lookup(goodput(batch_size, 1.0, t.value), t.extrapolated)
        a, a_out = self.acceptance(ctx, policy)
        return Lookup(goodput(batch_size, expected_tokens(a, k), t.value), t.extrapolated or a_out)
