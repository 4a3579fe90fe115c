"""Plan: goodput per (batch, context, K) cell -> per-cell oracle K -> a compact valid schedule,
with predicted goodput against no-spec, the best static K, the best batch-only schedule and the
per-cell oracle.

Objective: each cell counts equally (or by a user weight): a plan's score is the mean over cells
of goodput / oracle goodput, so large batches (whose absolute goodput is larger) do not drown the
small ones. Constraint (`floor`): a range's K must not be predicted below `floor` x no-spec in any
of its cells — one K per batch range must not buy a gain at long context with a loss at short
context (the demo's batch-only table chose K = 3 at B = 1 predicted x0.97 at ctx 512 for x1.31 at
4096, and measured x0.947 there); the goodput table is already at the acceptance's lower
confidence bound, so the floor is a bound on a conservative prediction. Range boundaries sit
between grid points: the arithmetic midpoint for batch size, the geometric midpoint for context
(the profile is read in log context).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from specsched.errors import UserError
from specsched.planner.compact import Compaction, compact
from specsched.planner.interpolate import CostModel, Extrapolation
from specsched.schedule import INF, Schedule, parse_schedule

_FORBIDDEN = 1e9  # score of a (cell, K) below the floor: larger than any block's total


class Arm(str, Enum):
    NO_SPEC = "no-spec"
    STATIC = "best static K"
    BATCH_ONLY = "best batch-only"
    PLAN = "plan"
    ORACLE = "per-cell oracle"


@dataclass(frozen=True, slots=True)
class PlanConfig:
    max_batch_ranges: int = 4
    max_ctx_ranges: int = 4
    batch_only: bool = False
    max_k: int | None = None
    min_gain: float = 0.0  # keep K=0 unless the best K is better by more than this fraction
    # no cell of a planned schedule (static, batch-only, 2-D) predicted below this x no-spec
    floor: float = 0.98
    extrapolation: Extrapolation = Extrapolation.ERROR

    def __post_init__(self) -> None:
        if self.max_batch_ranges < 1:
            raise UserError(f"--max-batch-ranges must be >= 1, got {self.max_batch_ranges}")
        if self.max_ctx_ranges < 1:
            raise UserError(f"--max-ctx-ranges must be >= 1, got {self.max_ctx_ranges}")
        if self.max_k is not None and self.max_k < 0:
            raise UserError(f"--max-k must be >= 0, got {self.max_k}")
        if not 0.0 <= self.min_gain < 10.0:
            raise UserError(f"--min-gain must be a fraction in [0, 10), got {self.min_gain}")
        if not 0.0 <= self.floor <= 1.0:
            raise UserError(f"--floor must be a fraction of no-spec in [0, 1], got {self.floor}")


@dataclass(frozen=True, slots=True)
class GoodputTable:
    """Goodput (tokens/s) per cell and K. goodput: [num_batch, num_ctx, num_k]."""

    batch_sizes: tuple[int, ...]
    contexts: tuple[int, ...]
    ks: tuple[int, ...]  # ascending, ks[0] == 0
    goodput: np.ndarray  # [B, C, K]
    extrapolated: np.ndarray  # [B, C] bool
    model: CostModel | None = None  # what the goodput came from (None: a hand-built table)


@dataclass(frozen=True, slots=True)
class ArmResult:
    arm: Arm
    k_cells: np.ndarray  # [B, C] K per cell
    speedup: np.ndarray  # [B, C] goodput / no-spec goodput
    of_oracle: np.ndarray  # [B, C] goodput / oracle goodput
    shape: tuple[int, int]  # (batch ranges, ctx ranges); (0, 0) for the unconstrained oracle

    @property
    def geomean_speedup(self) -> float:
        return float(np.exp(np.log(self.speedup).mean()))

    @property
    def mean_of_oracle(self) -> float:
        return float(self.of_oracle.mean())


@dataclass(frozen=True, slots=True)
class PlanResult:
    table: GoodputTable
    config: PlanConfig
    schedule: Schedule
    arms: dict[Arm, ArmResult]


def goodput_table(
    model: CostModel,
    batch_sizes: tuple[int, ...] | None = None,
    contexts: tuple[int, ...] | None = None,
    max_k: int | None = None,
    extrapolation: Extrapolation = Extrapolation.ERROR,
) -> GoodputTable:
    """Evaluate Goodput(B, ctx, K) on the cells (default: the profile's own grid)."""
    g = model.profile.grid
    bs = tuple(sorted(set(batch_sizes or g.batch_sizes)))
    cs = tuple(sorted(set(contexts or g.contexts)))
    ks = tuple(k for k in g.ks if max_k is None or k <= max_k)
    if bs[0] < 1 or cs[0] < 1:
        raise UserError("batch sizes and contexts to plan for must be >= 1")
    out = np.zeros((len(bs), len(cs), len(ks)))
    flags = np.zeros((len(bs), len(cs)), dtype=bool)
    for i, b in enumerate(bs):
        for j, c in enumerate(cs):
            for m, k in enumerate(ks):
                v = model.goodput(b, c, k, extrapolation)
                out[i, j, m] = v.value
                flags[i, j] |= v.extrapolated
    return GoodputTable(bs, cs, ks, out, flags, model)


def oracle_k_index(table: GoodputTable, min_gain: float = 0.0) -> np.ndarray:
    """[B, C] index into ks of the best K per cell; K=0 unless the best beats it by > min_gain."""
    g = table.goodput
    best = np.argmax(g, axis=-1)
    best_val = np.take_along_axis(g, best[..., None], axis=-1)[..., 0]
    return np.where(best_val > g[..., 0] * (1.0 + min_gain), best, 0)


def _arm(arm: Arm, table: GoodputTable, kidx: np.ndarray, shape: tuple[int, int]) -> ArmResult:
    g = table.goodput
    chosen = np.take_along_axis(g, kidx[..., None], axis=-1)[..., 0]
    ks = np.asarray(table.ks)
    return ArmResult(arm, ks[kidx], chosen / g[..., 0], chosen / g.max(axis=-1), shape)


def _boundaries(
    values: tuple[int, ...], groups: tuple[tuple[int, int], ...], log: bool
) -> list[int]:
    """First value (lo) of each range: 1, then the midpoint between neighbouring groups + 1."""
    los = [1]
    for (_, prev_hi), (next_lo, _) in itertools.pairwise(groups):
        a, b = values[prev_hi], values[next_lo]
        mid = math.isqrt(a * b) if log else (a + b) // 2
        los.append(mid + 1)
    return los


def schedule_from_compaction(table: GoodputTable, comp: Compaction, batch_only: bool) -> Schedule:
    """Entries for the compaction; 3-item when there is one context range, else 5-item."""
    b_los = _boundaries(table.batch_sizes, comp.row_groups, log=False)
    b_his = [lo - 1 for lo in b_los[1:]] + [max(table.batch_sizes[-1], b_los[-1])]
    c_los = _boundaries(table.contexts, comp.col_groups, log=True)
    c_his = [lo - 1 for lo in c_los[1:]] + [INF]
    entries: list[list[int]] = []
    for i, (blo, bhi) in enumerate(zip(b_los, b_his)):
        for j, (clo, chi) in enumerate(zip(c_los, c_his)):
            k = table.ks[comp.k_index[i][j]]
            entries.append([blo, bhi, k] if len(c_los) == 1 else [blo, bhi, clo, chi, k])
    if batch_only and len(c_los) != 1:
        raise AssertionError("batch-only compaction produced a context axis")
    return parse_schedule(entries)


def make_plan(
    table: GoodputTable, config: PlanConfig, weights: np.ndarray | None = None
) -> PlanResult:
    """Oracle, compaction and the comparison arms for one goodput table (see module doc)."""
    if table.ks[0] != 0:
        raise UserError("planning needs K=0 (no-spec) in the profile")
    if config.max_k is not None and table.ks[-1] > config.max_k:
        keep = [i for i, k in enumerate(table.ks) if k <= config.max_k]
        table = GoodputTable(
            table.batch_sizes,
            table.contexts,
            tuple(table.ks[i] for i in keep),
            table.goodput[..., keep],
            table.extrapolated,
            table.model,
        )
    w = np.ones(table.goodput.shape[:2]) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != table.goodput.shape[:2] or (w < 0).any():
        raise UserError(f"weights must be a non-negative [batch, ctx] array of shape {w.shape}")
    scores = table.goodput / table.goodput.max(axis=-1, keepdims=True) * w[..., None]  # [B,C,K]
    speedup = table.goodput / table.goodput[..., :1]  # [B, C, K]
    # a K below the floor in a cell: no block holding that cell may choose it (K = 0 scores >= 0)
    scores = np.where(speedup < config.floor, -_FORBIDDEN, scores)
    n, m = config.max_batch_ranges, config.max_ctx_ranges
    static = compact(scores, 1, 1, 0, config.min_gain)
    batch_only = compact(scores, n, 1, 0, config.min_gain)
    plan = batch_only if config.batch_only else compact(scores, n, m, 0, config.min_gain)
    zero = np.zeros(table.goodput.shape[:2], dtype=np.int64)
    arms = {
        Arm.NO_SPEC: _arm(Arm.NO_SPEC, table, zero, (1, 1)),
        Arm.STATIC: _arm(Arm.STATIC, table, static.cell_k_index(), (1, 1)),
        Arm.BATCH_ONLY: _arm(
            Arm.BATCH_ONLY, table, batch_only.cell_k_index(), (len(batch_only.row_groups), 1)
        ),
        Arm.PLAN: _arm(
            Arm.PLAN, table, plan.cell_k_index(), (len(plan.row_groups), len(plan.col_groups))
        ),
        Arm.ORACLE: _arm(Arm.ORACLE, table, oracle_k_index(table, config.min_gain), (0, 0)),
    }
    schedule = schedule_from_compaction(table, plan, config.batch_only)
    return PlanResult(table, config, schedule, arms)
