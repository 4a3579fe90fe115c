"""The `Schedule` value: a validated rectangular grid K[batch-size range][context range].

Entries are 3-item `[bs_lo, bs_hi, K]` (vLLM's `num_speculative_tokens_per_batch_size`) or 5-item
`[bs_lo, bs_hi, ctx_lo, ctx_hi, K]`. Ranges are inclusive and 1-indexed. A 3-item schedule is the
5-item schedule with the single context range [1, inf). Batch sizes in a gap between batch-size
ranges inherit the previous range's K; batch sizes above the last range use the last range (both as
vLLM's `build_dynamic_sd_schedule_lookup`). The last context range extends to infinity.

Lookup is two bisects over range lower bounds: O(log N + log M) time and memory proportional to
the number of *ranges*, whatever numbers the ranges hold (a range up to `INF` costs nothing).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

# The one "unbounded" number of the project: the upper bound written for an open-ended range (the
# last context range, a batch range meant to cover every batch size), the largest value a
# schedule item may hold, and the bound of other unbounded counts (max_tokens, top_k, CLI integer
# lists). int32 max: what a JSON consumer in C or vLLM's pydantic int accepts.
INF = 2**31 - 1
# Largest K a schedule may hold: far above any useful draft length (vLLM's own tests use <= 16),
# small enough that a typo (K = 10**9) is an error instead of a 10**9-token verify step.
MAX_SPEC_TOKENS = 128


class Bucket(NamedTuple):
    """The grid cell a lookup landed in. ctx_hi of the last context range means "and above"."""

    bs_lo: int
    bs_hi: int
    ctx_lo: int
    ctx_hi: int


class _Index(NamedTuple):
    batch_los: tuple[int, ...]  # [N] lower bound of each batch-size range
    ctx_los: tuple[int, ...]  # [M] lower bound of each context range
    k_eff: tuple[tuple[int, ...], ...]  # [N][M] K after the max_k clamp


@dataclass(frozen=True)
class Schedule:
    """K per (batch-size range, context range). Build with `parse_schedule` (validates) or
    `Schedule.constant(k)`; the lookup index is derived lazily from the fields."""

    batch_ranges: tuple[tuple[int, int], ...]  # sorted, non-overlapping, first starts at 1
    ctx_ranges: tuple[tuple[int, int], ...]  # contiguous partition from 1; last is open-ended
    k_grid: tuple[tuple[int, ...], ...]  # [num_batch_ranges][num_ctx_ranges], as written
    arity: int  # 3 or 5: the form it was written in
    max_k: int | None = None  # clamp (vLLM clamps to num_speculative_tokens)

    @classmethod
    def constant(cls, k: int) -> Schedule:
        """K for every batch size and context: the one-entry 3-item schedule `[[1, 1, k]]` (the
        batch sizes above 1 inherit it). K = 0 is no speculation. The only static-K builder."""
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_SPEC_TOKENS:
            from specsched.errors import ScheduleError

            raise ScheduleError(f"K must be an integer in [0, {MAX_SPEC_TOKENS}], got {k!r}")
        return cls(((1, 1),), ((1, INF),), ((k,),), 3, None)

    @cached_property
    def _index(self) -> _Index:
        cap = self.max_k
        k_eff = tuple(tuple(k if cap is None else min(k, cap) for k in row) for row in self.k_grid)
        return _Index(tuple(lo for lo, _ in self.batch_ranges),
                      tuple(lo for lo, _ in self.ctx_ranges), k_eff)

    # -- lookup -------------------------------------------------------------------------------
    def row_for(self, batch_size: int) -> int:
        """Row index for a batch size (>= 1); gaps inherit the previous row, the tail the last."""
        row = bisect_right(self._index.batch_los, batch_size) - 1
        return row if row > 0 else 0

    def col_for(self, ctx: int) -> int:
        """Column index for a context length; ctx < 1 (nothing computed yet) maps to column 0."""
        col = bisect_right(self._index.ctx_los, ctx) - 1
        return col if col > 0 else 0

    def k_for(self, batch_size: int, ctx: int) -> int:
        """K (after the max_k clamp) for a batch of `batch_size` requests at context `ctx`: K
        alone, for checks and scripts (the policy room routes with `lookup` and `k_row`)."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        index = self._index
        row = bisect_right(index.batch_los, batch_size) - 1
        col = bisect_right(index.ctx_los, ctx) - 1
        return index.k_eff[row][col if col > 0 else 0]

    def lookup(self, batch_size: int, ctx: int) -> tuple[int, Bucket]:
        """(K, the cell as written) for (batch_size, ctx) in one pass: what routing needs."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        index = self._index
        row = bisect_right(index.batch_los, batch_size) - 1
        col = max(bisect_right(index.ctx_los, ctx) - 1, 0)
        (bs_lo, bs_hi), (ctx_lo, ctx_hi) = self.batch_ranges[row], self.ctx_ranges[col]
        return index.k_eff[row][col], Bucket(bs_lo, bs_hi, ctx_lo, ctx_hi)

    def k_row(self, batch_size: int) -> tuple[int, ...]:
        """Effective K per context column for the row serving `batch_size`."""
        return self._index.k_eff[self.row_for(batch_size)]

    # -- views --------------------------------------------------------------------------------
    @property
    def is_batch_only(self) -> bool:
        """True when there is a single context range (the schedule ignores context)."""
        return len(self.ctx_ranges) == 1

    @property
    def effective_grid(self) -> tuple[tuple[int, ...], ...]:
        """K per cell after the max_k clamp."""
        return self._index.k_eff

    @property
    def k_values(self) -> tuple[int, ...]:
        """Distinct K (after clamping) the schedule can emit, ascending."""
        return tuple(sorted({k for row in self._index.k_eff for k in row}))

    @property
    def max_emitted_k(self) -> int:
        return max(self.k_values)

    def entries(self, arity: int = 5) -> list[list[int]]:
        """Entries as written (unclamped). arity=3 only for batch-only schedules."""
        if arity == 3:
            if not self.is_batch_only:
                raise ValueError("a schedule with a context axis has no exact 3-item form")
            return [[lo, hi, row[0]] for (lo, hi), row in zip(self.batch_ranges, self.k_grid)]
        out: list[list[int]] = []
        for (bs_lo, bs_hi), row in zip(self.batch_ranges, self.k_grid):
            for (ctx_lo, ctx_hi), k in zip(self.ctx_ranges, row):
                out.append([bs_lo, bs_hi, ctx_lo, ctx_hi, k])
        return out

    def clamped(self, max_k: int | None) -> Schedule:
        """The same grid with another clamp."""
        return Schedule(self.batch_ranges, self.ctx_ranges, self.k_grid, self.arity, max_k)
