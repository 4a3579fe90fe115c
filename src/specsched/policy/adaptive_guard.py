"""Per-cell bookkeeping of the adaptive policy: exploration period with back-off, and the guard
that turns speculation off where it measurably loses (how deep a cell may draft: `adaptive_trust`).

The guard compares, within one (batch x context) cell, steps that drafted with steps that did not,
each as r = measured goodput / the cost model's predicted no-spec goodput for that step's batch
(so batches of different sizes and contexts compare). When the mean r of drafting steps is below
the no-spec steps' by more than `z` standard errors of the difference (Welch), the cell drafts
nothing for `COOLDOWN` of its steps, then starts a fresh comparison: a model that is wrong about
a cell cannot keep it losing, and a cell whose text changed gets another chance.
No torch here.
"""

from __future__ import annotations

import math
from collections import deque

WINDOW = 32  # recent steps per population
MIN_SPEC, MIN_NOSPEC = 6, 3
MAX_BACKOFF = 4
COOLDOWN = 48  # steps of the cell without drafting after the guard trips
EARLY_PROBE = 6  # a cell outside the cost prior's box is first probed after this many steps


def _mean_var(xs: deque[float]) -> tuple[float, float]:
    n = len(xs)
    mean = sum(xs) / n
    var = sum((x - mean) ** 2 for x in xs) / (n - 1) if n > 1 else 0.0
    return mean, var


class CellState:
    """One cell: step count, exploration period, and the guard's two samples."""

    __slots__ = ("backoff", "early_probe", "guarded_until", "nospec", "spec", "steps",
                 "steps_since_probe", "trips")

    def __init__(self) -> None:
        self.steps = 0
        self.steps_since_probe = 0
        self.backoff = 1
        self.guarded_until = 0
        self.trips = 0  # how many times the guard turned drafting off here
        self.early_probe = False  # probe K = 1 soon if the cell does not draft (no profile here)
        self.spec: deque[float] = deque(maxlen=WINDOW)
        self.nospec: deque[float] = deque(maxlen=WINDOW)

    @property
    def guarded(self) -> bool:
        return self.steps < self.guarded_until

    def due(self, every: int) -> bool:
        """Whether this step of the cell is an exploration step."""
        return self.steps_since_probe + 1 >= every * self.backoff

    def early_probe_due(self, after: int, drafting: bool) -> bool:
        """An early K = 1 probe is pending, the cell has run `after` steps and drafts nothing
        (a cell that drafts has no use for it: the flag is dropped)."""
        if not self.early_probe or (not drafting and self.steps < after):
            return False
        self.early_probe = False
        return not drafting

    def probed(self, confirmed: bool) -> None:
        """A probe ran; `confirmed`: it agreed with the cell's choice (back off), else reset."""
        self.steps_since_probe = 0
        self.backoff = min(self.backoff * 2, MAX_BACKOFF) if confirmed else 1

    def mean(self, drafted: bool) -> float | None:
        xs = self.spec if drafted else self.nospec
        return sum(xs) / len(xs) if xs else None

    def record(self, drafted: bool, ratio: float, z: float) -> None:
        """One measured step of the cell; trip the guard when drafting measurably loses."""
        if not math.isfinite(ratio):
            return
        (self.spec if drafted else self.nospec).append(ratio)
        if self.guarded or len(self.spec) < MIN_SPEC or len(self.nospec) < MIN_NOSPEC:
            return
        ms, vs = _mean_var(self.spec)
        mn, vn = _mean_var(self.nospec)
        se = math.sqrt(vs / len(self.spec) + vn / len(self.nospec))
        if ms + z * se < mn:
            self.guarded_until = self.steps + COOLDOWN
            self.trips += 1
            self.spec.clear()  # judge drafting afresh after the cooldown

    def advance(self) -> None:
        self.steps += 1
        self.steps_since_probe += 1
