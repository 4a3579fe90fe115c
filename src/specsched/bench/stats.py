"""Statistics for bench results: summaries, ratio vs baseline with a bootstrap CI, noise floors,
verdicts, order bias. numpy/scipy only (no torch).

Ratios are geometric-mean ratios exp(mean log a - mean log b); paired by replicate when both arms
have the same replicates (the arms of a replicate share prompts and adjacent time, so pairing
removes the block effect). CI: percentile bootstrap (Efron & Tibshirani 1993, "An Introduction to
the Bootstrap", ch. 13). A difference is a result only when its whole CI clears the noise floor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

Z95 = 1.959964


class Verdict(str, Enum):
    WIN = "win"
    LOSS = "loss"
    WITHIN_NOISE = "within noise"


@dataclass(frozen=True, slots=True)
class Summary:
    n: int
    median: float
    spread: float  # (max - min) / median: the relative range of replicates
    cv: float  # sample sd of log values (~ relative sd)


@dataclass(frozen=True, slots=True)
class RatioCI:
    ratio: float
    lo: float
    hi: float
    n: int
    paired: bool


@dataclass(frozen=True, slots=True)
class OrderBias:
    by_position: dict[int, float]  # position -> mean relative deviation from its arm's mean
    slope: float  # relative change per position (linear fit)
    p_value: float  # of the slope; nan when it cannot be estimated


def summarize(values: Sequence[float]) -> Summary:
    """Median, relative range and log-sd of positive measurements."""
    x = np.asarray(values, dtype=float)  # [n]
    if x.size == 0:
        return Summary(0, math.nan, math.nan, math.nan)
    med = float(np.median(x))
    spread = float((x.max() - x.min()) / med) if med else math.nan
    cv = float(np.std(np.log(x), ddof=1)) if x.size > 1 else math.nan
    return Summary(int(x.size), med, spread, cv)


def bootstrap_ratio_ci(values: Sequence[float], base: Sequence[float], *, paired: bool,
                       n_boot: int = 4000, confidence: float = 0.95, seed: int = 0) -> RatioCI:
    """Geometric-mean ratio values/base with a percentile bootstrap CI.

    paired=True needs equal lengths, element i of both from the same replicate."""
    a = np.log(np.asarray(values, dtype=float))  # [n_a]
    b = np.log(np.asarray(base, dtype=float))  # [n_b]
    if a.size == 0 or b.size == 0:
        raise ValueError("bootstrap_ratio_ci needs at least one value on each side")
    rng = np.random.default_rng(seed)
    alpha = (1 - confidence) / 2
    if paired:
        if a.size != b.size:
            raise ValueError("paired bootstrap needs values and base of equal length")
        d = a - b  # [n] per-replicate log ratios
        idx = rng.integers(0, d.size, size=(n_boot, d.size))
        boots = d[idx].mean(axis=1)  # [n_boot]
        point = float(d.mean())
    else:
        ia = rng.integers(0, a.size, size=(n_boot, a.size))
        ib = rng.integers(0, b.size, size=(n_boot, b.size))
        boots = a[ia].mean(axis=1) - b[ib].mean(axis=1)  # [n_boot]
        point = float(a.mean() - b.mean())
    lo, hi = np.quantile(boots, [alpha, 1 - alpha])
    return RatioCI(math.exp(point), math.exp(float(lo)), math.exp(float(hi)),
                   int(min(a.size, b.size)), paired)


def replicate_floor(groups: Sequence[Sequence[float]], z: float = Z95) -> float:
    """Relative difference two identical arms reach by chance (95%), from within-arm spread:
    z * sqrt(2/n) * pooled sd of log values, as a ratio offset. 0 when no arm has 2 replicates."""
    variances, sizes = [], []
    for g in groups:
        x = np.log(np.asarray(g, dtype=float))
        if x.size >= 2:
            variances.append(float(np.var(x, ddof=1)))
            sizes.append(x.size)
    if not variances:
        return 0.0
    pooled_sd = math.sqrt(sum(variances) / len(variances))
    n = float(np.median(sizes))
    return math.expm1(z * math.sqrt(2.0 / n) * pooled_sd)


def control_floor(control_ratios: Sequence[float]) -> float:
    """Largest measured difference between arms that run the same configuration."""
    return max((abs(r - 1.0) for r in control_ratios), default=0.0)


def verdict(ci: RatioCI, floor: float, higher_is_better: bool = True) -> Verdict:
    """win/loss only when the whole CI clears [1 - floor, 1 + floor]."""
    if ci.lo > 1 + floor:
        return Verdict.WIN if higher_is_better else Verdict.LOSS
    if ci.hi < 1 - floor:
        return Verdict.LOSS if higher_is_better else Verdict.WIN
    return Verdict.WITHIN_NOISE


def order_bias(positions: Sequence[int], groups: Sequence[str],
               values: Sequence[float]) -> OrderBias:
    """Effect of run position: each trial's log value minus its group's mean (group = arm within a
    scenario), averaged per position, and the least-squares slope over position."""
    pos = np.asarray(positions, dtype=float)  # [n]
    logs = np.log(np.asarray(values, dtype=float))  # [n]
    keys = list(groups)
    resid = np.empty_like(logs)
    for key in set(keys):
        mask = np.array([k == key for k in keys])
        resid[mask] = logs[mask] - logs[mask].mean()
    by_pos = {int(p): math.expm1(float(resid[pos == p].mean())) for p in sorted(set(positions))}
    if len(by_pos) < 2 or resid.size < 3:
        return OrderBias(by_pos, 0.0, math.nan)
    from scipy.stats import linregress

    fit = linregress(pos, resid)
    p = float(fit.pvalue) if np.isfinite(fit.pvalue) else math.nan
    return OrderBias(by_pos, math.expm1(float(fit.slope)), p)


def bootstrap_mean_ci(values: Sequence[float], n_boot: int = 4000, confidence: float = 0.95,
                      seed: int = 0) -> tuple[float, float, float]:
    """Geometric mean of positive values with a percentile bootstrap CI: (mean, lo, hi)."""
    x = np.log(np.asarray(values, dtype=float))  # [n]
    if x.size == 0:
        return (math.nan, math.nan, math.nan)
    idx = np.random.default_rng(seed).integers(0, x.size, size=(n_boot, x.size))
    boots = x[idx].mean(axis=1)  # [n_boot]
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(boots, [alpha, 1 - alpha])
    return (math.exp(float(x.mean())), math.exp(float(lo)), math.exp(float(hi)))
