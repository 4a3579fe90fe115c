"""Decode-pool batch shapes for the verify-attention microbenchmark (pure, no torch).

A *shape* is the list of per-sequence contexts (num_computed_tokens) of one verify step at a fixed
batch size B. The grid is designed so that the three candidate cost statistics are separable:

- Σctx families (`SumFamily`): at each mean-context level c̄, several distributions with the
  **same Σctx = B·c̄** (uniform, one long + many short, few long, many long, geometric, ramp), so
  max and median vary while the sum is fixed.
- same-max families (`MaxFamily`): at each max level M, distributions with the **same max = M**
  and different sums (all at M, one at M, a quarter at M, three quarters at M).

Together they keep Σctx, B·max and B·median far from collinear; `design_correlations` reports how
far, so a run can say when its own grid cannot tell the hypotheses apart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

from specsched.errors import UserError


class SumFamily(str, Enum):
    """Distributions with a fixed Σctx = B x level."""

    UNIFORM = "uniform"
    ONE_LONG = "one_long"  # one sequence holds half of Σctx, the rest share the other half
    FEW_LONG = "few_long"  # a quarter of the batch is 4x longer than the rest (median = short)
    MAJORITY_LONG = "majority_long"  # B/2+1 are 16x longer than the rest (median = long > mean)
    GEOMETRIC = "geometric"  # ctx_i ∝ 0.6^i
    RAMP = "ramp"  # ctx_i ∝ i + 1


class MaxFamily(str, Enum):
    """Distributions with a fixed max = level; the others at level/16."""

    ALL_AT_MAX = "all_at_max"
    ONE_AT_MAX = "one_at_max"
    QUARTER_AT_MAX = "quarter_at_max"
    THREE_QUARTERS_AT_MAX = "three_quarters_at_max"


@dataclass(frozen=True, slots=True)
class BatchShape:
    """Contexts of the B sequences of one verify step; `group` names what it holds fixed."""

    name: str
    family: str
    group: str  # "sum=<Σ>" or "max=<M>"
    contexts: tuple[int, ...]

    @property
    def batch_size(self) -> int:
        return len(self.contexts)

    @property
    def total_ctx(self) -> int:
        """Σctx: the mean aggregator times B."""
        return sum(self.contexts)

    @property
    def max_ctx(self) -> int:
        return max(self.contexts)

    @property
    def median_ctx(self) -> float:
        return float(np.median(self.contexts))

    @property
    def batch_max(self) -> int:
        """B x max ctx: the work of a kernel that pads every sequence to the longest."""
        return self.batch_size * self.max_ctx

    @property
    def batch_median(self) -> float:
        return self.batch_size * self.median_ctx


@dataclass(frozen=True, slots=True)
class ShapeGrid:
    """The shape design: batch size, Σctx levels (as mean ctx) and same-max levels."""

    batch_size: int = 8
    mean_levels: tuple[int, ...] = (256, 512, 1024)
    max_levels: tuple[int, ...] = (1024, 2048)
    min_ctx: int = 16  # no sequence shorter than this

    def __post_init__(self) -> None:
        if self.batch_size < 4:
            raise UserError(
                f"batch size must be >= 4 to separate the statistics, got {self.batch_size}"
            )
        if not self.mean_levels and not self.max_levels:
            raise UserError("need at least one mean-ctx level or max-ctx level")
        if self.min_ctx < 1:
            raise UserError(f"min ctx must be >= 1, got {self.min_ctx}")
        for level in (*self.mean_levels, *self.max_levels):
            if level < 16 * self.min_ctx:
                raise UserError(
                    f"every ctx level must be >= 16 x min ctx = {16 * self.min_ctx}, got {level}"
                )


def _fill_to_sum(weights: Sequence[float], total: int, floor: int) -> tuple[int, ...]:
    """Integers >= floor proportional to `weights`, summing exactly to `total`, descending."""
    n = len(weights)
    if total < n * floor:
        raise ValueError(f"cannot split {total} into {n} contexts of at least {floor}")
    spare = total - n * floor
    w = np.asarray(weights, dtype=float)
    raw = spare * w / w.sum()  # [n]
    base = np.floor(raw).astype(int)
    remainder = spare - int(base.sum())
    order = np.argsort(-(raw - base), kind="stable")  # largest fractional parts get the rest
    base[order[:remainder]] += 1
    return tuple(sorted((int(b) + floor for b in base), reverse=True))


def _sum_weights(family: SumFamily, b: int) -> list[float]:
    few = max(1, b // 4)
    if family is SumFamily.UNIFORM:
        return [1.0] * b
    if family is SumFamily.ONE_LONG:
        return [float(b - 1)] + [1.0] * (b - 1)  # the long one holds half of the sum
    if family is SumFamily.FEW_LONG:
        return [4.0] * few + [1.0] * (b - few)
    if family is SumFamily.MAJORITY_LONG:
        return [16.0] * (b // 2 + 1) + [1.0] * (b - b // 2 - 1)
    if family is SumFamily.GEOMETRIC:
        return [0.6**i for i in range(b)]
    return [float(i + 1) for i in range(b)]  # RAMP


def _max_contexts(family: MaxFamily, b: int, level: int, floor: int) -> tuple[int, ...]:
    short = max(floor, level // 16)
    count = {
        MaxFamily.ALL_AT_MAX: b,
        MaxFamily.ONE_AT_MAX: 1,
        MaxFamily.QUARTER_AT_MAX: max(1, b // 4),
        MaxFamily.THREE_QUARTERS_AT_MAX: b - max(1, b // 4),
    }[family]
    return tuple([level] * count + [short] * (b - count))


def generate_shapes(grid: ShapeGrid) -> list[BatchShape]:
    """All shapes of the design, Σctx families first, then same-max families."""
    b = grid.batch_size
    shapes: list[BatchShape] = []
    for level in grid.mean_levels:
        total = b * level
        for fam in SumFamily:
            ctx = _fill_to_sum(_sum_weights(fam, b), total, grid.min_ctx)
            shapes.append(BatchShape(f"{fam.value}@mean{level}", fam.value, f"sum={total}", ctx))
    for level in grid.max_levels:
        for mfam in MaxFamily:
            ctx = _max_contexts(mfam, b, level, grid.min_ctx)
            shapes.append(BatchShape(f"{mfam.value}@max{level}", mfam.value, f"max={level}", ctx))
    return shapes


def predictors(shapes: Sequence[BatchShape]) -> dict[str, np.ndarray]:
    """The three candidate work measures per shape: Σctx, B·max ctx, B·median ctx."""
    return {
        "sum": np.array([s.total_ctx for s in shapes], dtype=float),  # [n]
        "batch_max": np.array([s.batch_max for s in shapes], dtype=float),  # [n]
        "batch_median": np.array([s.batch_median for s in shapes], dtype=float),  # [n]
    }


def design_correlations(shapes: Sequence[BatchShape]) -> dict[str, float]:
    """Pearson correlation between each pair of predictors over the grid (1.0 = inseparable)."""
    x = predictors(shapes)
    out: dict[str, float] = {}
    names = list(x)
    for i, a in enumerate(names):
        for c in names[i + 1 :]:
            r = np.corrcoef(x[a], x[c])[0, 1]
            out[f"{a}~{c}"] = float(r) if math.isfinite(r) else 1.0
    return out
