"""Schedule linter: legal but suspicious schedules. Warnings, never errors."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from specsched.schedule.model import Schedule


class LintCode(str, Enum):
    K_DECREASES_WITH_CONTEXT = "k-decreases-with-context"
    BATCH_GAP = "batch-gap"
    CLAMPED = "clamped"
    MERGE_CANDIDATE = "merge-candidate"


@dataclass(frozen=True, slots=True)
class LintWarning:
    code: LintCode
    message: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code.value, "message": self.message}


def _cell(s: Schedule, r: int, c: int) -> str:
    (bl, bh), (cl, ch) = s.batch_ranges[r], s.ctx_ranges[c]
    ctx = f"{cl}+" if c == len(s.ctx_ranges) - 1 else f"{cl}-{ch}"
    return f"bs {bl}-{bh} x ctx {ctx}"


def lint_schedule(s: Schedule) -> list[LintWarning]:
    """K falling as context grows (the context axis exists to raise K for long contexts),
    batch-size gaps, K clamped by max_k, and cells whose K equals every neighbour's."""
    out: list[LintWarning] = []
    grid = s.effective_grid
    for r, row in enumerate(grid):
        for c in range(1, len(row)):
            if row[c] < row[c - 1]:
                out.append(
                    LintWarning(
                        LintCode.K_DECREASES_WITH_CONTEXT,
                        f"{_cell(s, r, c)}: K {row[c]} is lower than K {row[c - 1]} at shorter "
                        f"context ({_cell(s, r, c - 1)}); long contexts usually want K to rise",
                    )
                )
    for (_, prev_hi), (lo, _hi) in zip(s.batch_ranges, s.batch_ranges[1:]):
        if lo > prev_hi + 1:
            out.append(
                LintWarning(
                    LintCode.BATCH_GAP,
                    f"batch sizes {prev_hi + 1}-{lo - 1} are not covered; they inherit the K of "
                    f"the range ending at {prev_hi}",
                )
            )
    if s.max_k is not None:
        for r, row in enumerate(s.k_grid):
            for c, k in enumerate(row):
                if k > s.max_k:
                    out.append(
                        LintWarning(
                            LintCode.CLAMPED,
                            f"{_cell(s, r, c)}: K {k} is clamped to max_k {s.max_k}",
                        )
                    )
    out.extend(_merge_candidates(s))
    return out


def _merge_candidates(s: Schedule) -> list[LintWarning]:
    grid = s.effective_grid
    nr, nc = len(grid), len(grid[0])
    out: list[LintWarning] = []
    if nr * nc < 2:
        return out
    for r in range(nr):
        for c in range(nc):
            nbrs = [
                grid[rr][cc]
                for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1))
                if 0 <= rr < nr and 0 <= cc < nc
            ]
            if all(k == grid[r][c] for k in nbrs):
                out.append(
                    LintWarning(
                        LintCode.MERGE_CANDIDATE,
                        f"{_cell(s, r, c)}: K {grid[r][c]} equals all its neighbours'; the cell "
                        f"can be merged into them",
                    )
                )
    return out
