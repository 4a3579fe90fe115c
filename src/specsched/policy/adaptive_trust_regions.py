"""The adaptive policy's trust regions, one per (batch x context) cell (each an
`adaptive_trust.TrustRegion`: how deep K may go before what the cell paid confirms the cost
model), opened at a cell's first step from what its neighbours verified in this run and, inside
the cost prior's box, what the profile verified near it; a new region judges at the machine
speed its most recently judged neighbour knows. No torch here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specsched.policy.adaptive_config import Cell, cell_of
from specsched.policy.adaptive_trust import Predict, TrustRegion
from specsched.policy.batch import StepOutcome


def _adjacent(a: Cell, b: Cell) -> bool:
    return abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1


class TrustRegions:
    """The regions of every cell seen. `trust_inside_box`: cells inside the cost prior's box get
    none (the model is trusted there: the rule before 2026-12-01 night, kept for A/B runs).
    `profiled`: (B, context, depth) points where the profile verified its fit
    (`StepCostModel.verified_depths`)."""

    def __init__(self, trust_inside_box: bool,
                 profiled: Sequence[tuple[int, int, int]] = ()) -> None:
        self.trust_inside_box = trust_inside_box
        self._cells: dict[Cell, TrustRegion] = {}
        self._num_timed = 0  # drafting steps judged, every cell (orders `last_timed`)
        self._profiled: dict[Cell, int] = {}  # a cell's profiled depth (the least of its points)
        for batch_size, ctx, depth in profiled:
            cell = cell_of(batch_size, ctx)
            self._profiled[cell] = min(depth, self._profiled.get(cell, depth))

    def profiled_depth(self, cell: Cell) -> int:
        """The profile's depth for a cell: its own points', else the least of the adjacent
        cells' points (a cell between two profiled batch sizes or contexts), else 0."""
        if cell in self._profiled:
            return self._profiled[cell]
        return min((d for c, d in self._profiled.items() if _adjacent(c, cell)), default=0)

    def __contains__(self, cell: Cell) -> bool:
        return cell in self._cells

    def open(self, cell: Cell, inside: bool, predict: Predict | None = None) -> bool:
        """A cell's first step (`inside`: within the cost prior's box); returns whether a
        region was opened. `predict`: the model the regions judge by; given, the new region
        judges at the machine speed its most recently judged neighbour knows (the machine's,
        not the cell's: a cell opened at a context bucket edge that judged at the profile's
        speed capped a well-accepting batch at K = 1 for 12 steps; notes/adaptive.md,
        2026-12-06 thirty-eighth stop)."""
        if cell in self._cells or (inside and self.trust_inside_box):
            return False
        neighbours = [t for c, t in self._cells.items() if _adjacent(c, cell)]
        trust = self._cells[cell] = TrustRegion()
        # what a neighbour verified in this run holds here too, until this cell says not
        trust.verified = max((t.verified for t in neighbours), default=0)
        if inside:
            trust.verified = max(trust.verified, self.profiled_depth(cell))
        judged = [t for t in neighbours if t.last_timed >= 0]
        if predict is not None and judged:
            trust.start_at_speed(max(judged, key=lambda t: t.last_timed).speed(predict))
        return True

    def cap(self, cell: Cell, steps: int, max_k: int) -> int:
        """The deepest K the cell may draft at its `steps`-th step (max_k without a region)."""
        trust = self._cells.get(cell)
        return max_k if trust is None else min(max_k, trust.cap(steps))

    def observe(self, cell: Cell, outcome: StepOutcome, seconds: float, x: np.ndarray,
                predict: Predict, steps: int, may_cap: bool = True) -> None:
        """A measured step of `cell` that drafted: did its deepest K cost what the model said?
        x [F]: the step's features; `predict`: the cost model before this step; `may_cap`:
        see `TrustRegion.timed`."""
        trust = self._cells.get(cell)
        drafted = [r.num_spec_tokens for r in outcome.requests]
        if trust is None or not drafted or max(drafted) == 0:
            return
        trust.timed(max(drafted), seconds, x, predict, steps, may_cap)
        trust.last_timed = self._num_timed
        self._num_timed += 1
