"""Which context statistic does verify-step attention time follow? Fits and an honest verdict.

Per kernel, three one-predictor least-squares fits over the shape grid (pure numpy):

    time ≈ a + b·Σctx          → the router's `mean` aggregator (mean x B = Σctx)
    time ≈ a + b·B·max ctx     → `max`
    time ≈ a + b·B·median ctx  → `median`

All three have two parameters, so their residual RMSEs compare directly. The verdict names the
best fit only when (1) it explains the data (R² >= min_r2, slope > 0), (2) it is clearly better
than the runner-up (runner-up RMSE / best RMSE >= min_rmse_ratio) and (3) it stays best when the
shapes are resampled (bootstrap win share >= min_bootstrap_win). Otherwise the verdict is
`inconclusive` with the reason, never a coin flip between fits that noise cannot tell apart.
A joint fit a + b₁·Σctx + b₂·B·max is reported as well, to show mixtures.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

import numpy as np

from specsched.errors import UserError


class Predictor(str, Enum):
    SUM = "sum"  # Σctx
    BATCH_MAX = "batch_max"  # B x max ctx
    BATCH_MEDIAN = "batch_median"  # B x median ctx


class Aggregator(str, Enum):
    """The router aggregator a verdict points at (values match `specsched.policy.route.CtxAgg`)."""

    MEAN = "mean"
    MAX = "max"
    MEDIAN = "median"
    INCONCLUSIVE = "inconclusive"


AGGREGATOR_OF: dict[Predictor, Aggregator] = {
    Predictor.SUM: Aggregator.MEAN,
    Predictor.BATCH_MAX: Aggregator.MAX,
    Predictor.BATCH_MEDIAN: Aggregator.MEDIAN,
}


@dataclass(frozen=True, slots=True)
class LinearFit:
    """y ≈ intercept + slope·x by least squares; spreads are relative to mean(y)."""

    predictor: Predictor
    intercept: float
    slope: float
    r2: float  # 0 when y is constant
    rmse: float
    rel_rmse: float  # rmse / mean(y)
    max_rel_residual: float  # max |residual| / mean(y)


@dataclass(frozen=True, slots=True)
class VerdictRule:
    min_r2: float = 0.75
    min_rmse_ratio: float = 1.25
    min_bootstrap_win: float = 0.9
    bootstrap: int = 1000
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_r2 < 1.0:
            raise UserError(f"min R² must be in [0, 1), got {self.min_r2}")
        if self.min_rmse_ratio < 1.0:
            raise UserError(f"min RMSE ratio must be >= 1, got {self.min_rmse_ratio}")
        if not 0.0 <= self.min_bootstrap_win <= 1.0:
            raise UserError(f"min bootstrap win must be in [0, 1], got {self.min_bootstrap_win}")
        if self.bootstrap < 0:
            raise UserError(f"bootstrap count must be >= 0, got {self.bootstrap}")


@dataclass(frozen=True, slots=True)
class JointFit:
    """y ≈ a + b_sum·Σctx + b_max·B·max; `sum_share` = Σ part / (Σ + max parts) at the grid mean."""

    intercept: float
    sum_coef: float
    batch_max_coef: float
    r2: float
    sum_share: float


@dataclass(frozen=True, slots=True)
class Verdict:
    aggregator: Aggregator
    best: Predictor
    runner_up: Predictor
    rmse_ratio: float  # runner-up RMSE / best RMSE (inf when the best fits exactly)
    bootstrap_win: float  # share of resamples in which `best` has the lowest RMSE
    reason: str
    fits: tuple[LinearFit, ...]
    joint: JointFit


def fit_linear(predictor: Predictor, x: np.ndarray, y: np.ndarray) -> LinearFit:
    """Ordinary least squares of y [n] on x [n] with an intercept."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    design = np.stack([np.ones_like(x), x], axis=1)  # [n, 2]
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef  # [n]
    ss_res = float(resid @ resid)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 1e-300 else 0.0
    rmse = float(np.sqrt(ss_res / len(y)))
    scale = abs(float(y.mean())) or 1.0
    return LinearFit(
        predictor=predictor,
        intercept=float(coef[0]),
        slope=float(coef[1]),
        r2=r2,
        rmse=rmse,
        rel_rmse=rmse / scale,
        max_rel_residual=float(np.abs(resid).max()) / scale,
    )


def fit_joint(sum_x: np.ndarray, max_x: np.ndarray, y: np.ndarray) -> JointFit:
    design = np.stack([np.ones_like(sum_x), sum_x, max_x], axis=1)  # [n, 3]
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float(resid @ resid) / ss_tot if ss_tot > 1e-300 else 0.0
    part_sum = abs(float(coef[1]) * float(sum_x.mean()))
    part_max = abs(float(coef[2]) * float(max_x.mean()))
    share = part_sum / (part_sum + part_max) if part_sum + part_max > 0 else 0.5
    return JointFit(float(coef[0]), float(coef[1]), float(coef[2]), r2, share)


def _best_by_rmse(x: Mapping[Predictor, np.ndarray], y: np.ndarray) -> Predictor | None:
    rmses: dict[Predictor, float] = {}
    for p, xs in x.items():
        if np.ptp(xs) == 0:
            return None  # degenerate resample: this predictor is constant
        rmses[p] = fit_linear(p, xs, y).rmse
    return min(rmses, key=lambda p: rmses[p])


def bootstrap_win_share(
    x: Mapping[Predictor, np.ndarray], y: np.ndarray, winner: Predictor, rule: VerdictRule
) -> float:
    """Share of shape resamples (with replacement) in which `winner` still has the lowest RMSE."""
    if rule.bootstrap == 0:
        return 1.0
    rng = np.random.default_rng(rule.seed)
    n = len(y)
    wins = valid = 0
    for _ in range(rule.bootstrap):
        idx = rng.integers(0, n, size=n)
        best = _best_by_rmse({p: xs[idx] for p, xs in x.items()}, y[idx])
        if best is None:
            continue
        valid += 1
        wins += best is winner
    return wins / valid if valid else 0.0


def decide(
    x: Mapping[str, np.ndarray] | Mapping[Predictor, np.ndarray],
    times: np.ndarray,
    rule: VerdictRule | None = None,
) -> Verdict:
    """Fit every predictor to `times` [n] (one value per shape) and name the aggregator."""
    rule = rule or VerdictRule()
    xs = {Predictor(k): np.asarray(v, dtype=float) for k, v in x.items()}
    y = np.asarray(times, dtype=float)
    if len(y) < 4 or any(len(v) != len(y) for v in xs.values()):
        raise UserError(f"need >= 4 shapes with one time each, got {len(y)}")
    fits = sorted((fit_linear(p, v, y) for p, v in xs.items()), key=lambda f: f.rmse)
    best, second = fits[0], fits[1]
    ratio = second.rmse / best.rmse if best.rmse > 0 else float("inf")
    if best.rmse == 0 and second.rmse == 0:
        ratio = 1.0
    joint = fit_joint(xs[Predictor.SUM], xs[Predictor.BATCH_MAX], y)
    win = bootstrap_win_share(xs, y, best.predictor, rule)
    name = AGGREGATOR_OF[best.predictor].value
    if best.r2 < rule.min_r2 or best.slope <= 0:
        reason = (
            f"no statistic explains the time: best R² {best.r2:.2f} (needs >= {rule.min_r2}), "
            f"slope {best.slope:.3g}"
        )
        agg = Aggregator.INCONCLUSIVE
    elif ratio < rule.min_rmse_ratio:
        reason = (
            f"{name} and {AGGREGATOR_OF[second.predictor].value} fit alike: RMSE ratio "
            f"{ratio:.2f} < {rule.min_rmse_ratio}"
        )
        agg = Aggregator.INCONCLUSIVE
    elif win < rule.min_bootstrap_win:
        reason = (
            f"{name} wins only {win:.0%} of bootstrap resamples (< {rule.min_bootstrap_win:.0%})"
        )
        agg = Aggregator.INCONCLUSIVE
    else:
        reason = (
            f"{best.predictor.value} fits best: R² {best.r2:.3f}, RMSE {ratio:.2f}x lower than "
            f"{second.predictor.value}, best in {win:.0%} of resamples"
        )
        agg = AGGREGATOR_OF[best.predictor]
    return Verdict(agg, best.predictor, second.predictor, ratio, win, reason, tuple(fits), joint)
