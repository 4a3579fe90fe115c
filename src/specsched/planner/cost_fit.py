"""The profile's step times as the parametric step cost model, with its residuals per point.

Step cost is close to linear in what a step does (`policy.cost`: T = a + b·B + c·Σctx + d·ΣK +
e·ΣK·ctx + f·max K + g·prefill), so the planner predicts T from the model fitted to the whole
profile (`adaptive_prior.fit_profile_cost`) instead of interpolating between neighbouring
points: the fit averages the noise of single points and extends to unprofiled cells along the
model (flagged as extrapolation). Residuals say how well the model describes the engine: an RMS
relative residual above `POOR_FIT_RMS` means its predictions should not be trusted (plan with
interpolation instead). What the plane misses at each profiled point is kept as its shape
(`policy.cost_shape`, measured / fitted, interpolated in log B and log context): the planner's
step time is the plane times that ratio, so a profiled cell gets its measured step (the plane
put B = 4 x ctx 512 10-13 % above its steps at K = 0..3 and 4-6 % at K = 4, 5 on the AVX-512
EPYC, which over-predicted the speedup of deep K there) while between and beyond the points the
plane carries how cost grows with context and batch size. No torch here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from specsched.planner.adaptive_prior import fit_profile_cost
from specsched.planner.profile import Profile
from specsched.policy.cost import FEATURES, NUM_FEATURES, StepCostModel

POOR_FIT_RMS = 0.10  # relative RMS residual above which the fit is reported as poor


@dataclass(frozen=True, slots=True)
class Residual:
    """One profiled point: measured and fitted step time (ms)."""

    batch_size: int
    ctx: int
    k: int
    measured_ms: float
    predicted_ms: float

    @property
    def rel(self) -> float:
        """(predicted - measured) / measured."""
        return (self.predicted_ms - self.measured_ms) / self.measured_ms


@dataclass(frozen=True, slots=True)
class CostFit:
    """The fitted model, its residual at every timing point and the profiled (B, ctx) box."""

    model: StepCostModel  # fitted by `fit_profile_cost`, which records the profiled box
    residuals: tuple[Residual, ...]

    @property
    def batch_range(self) -> tuple[int, int]:
        assert self.model.batch_range is not None  # set by fit_profile_cost
        return self.model.batch_range

    @property
    def ctx_range(self) -> tuple[int, int]:
        assert self.model.ctx_range is not None
        return self.model.ctx_range

    @property
    def rms_rel(self) -> float:
        return math.sqrt(sum(r.rel**2 for r in self.residuals) / len(self.residuals))

    @property
    def max_rel(self) -> float:
        return max(abs(r.rel) for r in self.residuals)

    @property
    def worst(self) -> Residual:
        return max(self.residuals, key=lambda r: abs(r.rel))

    @property
    def is_poor(self) -> bool:
        return self.rms_rel > POOR_FIT_RMS

    @property
    def is_exact(self) -> bool:
        """Fewer distinct points than model terms: residuals are ~0 by construction."""
        terms = NUM_FEATURES - 1 - (self.model.q_tile is None)  # prefill is never profiled
        return len(self.residuals) <= terms

    def step_ms(self, batch_size: int, ctx: int, k: int) -> float:
        """T(B requests at context ctx, K each), ms: the plane in the profile's shape (at a
        profiled point, its measured step)."""
        return 1000.0 * self.model.predict(self.model.features([ctx] * batch_size,
                                                               [k] * batch_size))

    def plane_ms(self, batch_size: int, ctx: int, k: int) -> float:
        """T on the linear model alone, ms (what the residuals measure)."""
        return 1000.0 * self.model.plane(self.model.features([ctx] * batch_size,
                                                             [k] * batch_size))

    def warning(self) -> str | None:
        """A loud one-liner when the fit is poor, else None."""
        if not self.is_poor:
            return None
        w = self.worst
        return (f"the fitted step cost model misses the profile by {100 * self.rms_rel:.1f}% RMS "
                f"(> {100 * POOR_FIT_RMS:.0f}%; worst {100 * w.rel:+.0f}% at B={w.batch_size} "
                f"ctx={w.ctx} K={w.k}): its predictions are unreliable; plan with --cost-model "
                f"interpolate, or re-profile with more --repeats on a quieter machine")

    def summary(self) -> str:
        w = self.worst
        exact = " (exact: no more points than terms)" if self.is_exact else ""
        q = self.model.q_tile
        tile = "" if q is None else f"; attention costs a tile pass more from K={q}"
        return (f"fitted step cost over {len(self.residuals)} points: residual RMS "
                f"{100 * self.rms_rel:.1f}%, max {100 * self.max_rel:.1f}% (B={w.batch_size} "
                f"ctx={w.ctx} K={w.k}){exact}{tile}")

    def to_obj(self) -> dict[str, Any]:
        """JSON: coefficients (seconds per feature unit), residual summary and every point."""
        return {
            "features": list(FEATURES),
            "coef_s": [float(f"{c:.6g}") for c in self.model.coef],
            "q_tile": self.model.q_tile,
            "rms_rel_residual": round(self.rms_rel, 4),
            "max_rel_residual": round(self.max_rel, 4),
            "poor_fit": self.is_poor,
            "profiled_batch_range": list(self.batch_range),
            "profiled_ctx_range": list(self.ctx_range),
            "residuals": [
                {"batch_size": r.batch_size, "ctx": r.ctx, "k": r.k,
                 "measured_ms": round(r.measured_ms, 4), "predicted_ms": round(r.predicted_ms, 4),
                 "rel": round(r.rel, 4)}
                for r in self.residuals
            ],
        }


def fit_cost(profile: Profile) -> CostFit:
    """Fit the step cost model to every timing point of `profile` (at least one)."""
    model = fit_profile_cost(profile)
    fit = CostFit(model, ())
    residuals = tuple(
        Residual(t.batch_size, t.ctx, t.k, t.t_step_ms.median,
                 fit.plane_ms(t.batch_size, t.ctx, t.k))
        for t in profile.timings
    )
    return CostFit(model, residuals)
