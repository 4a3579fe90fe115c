"""Hysteresis around a batch-mode K policy: a change of schedule cell must persist or be clear.

Near a bucket edge (a context boundary, or a batch size that counts prefill chunks) a step-by-step
policy can flip K every step (vLLM #49548 / #51466). `HysteresisPolicy` holds the cell it last
adopted and moves to the cell the inner policy names only when
- the inner policy has named another cell on `persist_steps` consecutive steps, or
- the step lies beyond the edge it crossed by more than `margin` (relative to that edge).
While it holds, the step gets the K the inner policy last chose in the held cell (after the same
prefill/room caps), and the decision's route names the held cell.

Edges: on each axis the edge between two cells is the first value of the upper cell (a batch-size
gap inherits the row below, as vLLM does, so the upper row's `bs_lo` is the edge either way). The
distance past it is `(value - edge) / edge` going up and `(edge - value) / edge` going down; the
larger of the two axes counts. `persist_steps=1` adopts every change at once: the wrapper is then
the inner policy exactly (the default behaviour of the upstream proposal). Per-request decisions
(no route) pass through unchanged. Deterministic, no clock, no torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from specsched.errors import UserError
from specsched.policy.base import KPolicy
from specsched.policy.batch import BatchState, KDecision, StepOutcome
from specsched.policy.caps import capped
from specsched.policy.route import RouteDecision
from specsched.schedule.model import Bucket


@dataclass(frozen=True, slots=True)
class HysteresisConfig:
    """persist_steps: consecutive steps another cell must be named before it is adopted (1: at
        once; 0: never by persistence alone, only past the margin).
    margin: relative distance past an edge that switches at once; None: no such shortcut."""

    persist_steps: int = 1
    margin: float | None = None

    def __post_init__(self) -> None:
        p = self.persist_steps
        if isinstance(p, bool) or not isinstance(p, int) or p < 0:
            raise UserError(f"hysteresis: persist_steps must be an integer >= 0, got {p!r}")
        m = self.margin
        if m is not None and (isinstance(m, bool) or not isinstance(m, (int, float))
                              or not math.isfinite(m) or m < 0):
            raise UserError(f"hysteresis: margin must be a number >= 0 or null, got {m!r}")
        if p == 0 and m is None:
            raise UserError("hysteresis: persist_steps 0 needs a margin (else K never changes)")

    @property
    def is_off(self) -> bool:
        """True when every change is adopted at once (the wrapper would change nothing)."""
        return self.persist_steps == 1 or self.margin == 0

    def wrap(self, inner: KPolicy) -> KPolicy:
        """`inner` itself when off, else a `HysteresisPolicy` around it."""
        return inner if self.is_off else HysteresisPolicy(inner, self.persist_steps, self.margin)


def _axis_distance(value: int, held: tuple[int, int], new: tuple[int, int]) -> float:
    """Relative distance of `value` past the edge between the held and the new range."""
    if new[0] > held[0]:  # moved up: the edge is where the new range starts
        return (value - new[0]) / new[0]
    if new[0] < held[0]:  # moved down: the edge is where the held range starts
        return (held[0] - value) / held[0]
    return 0.0


def edge_distance(route: RouteDecision, held: Bucket) -> float:
    """How far the step (batch size, context representative) lies past the held cell's edge."""
    new = route.bucket
    return max(
        _axis_distance(route.batch_size, (held.bs_lo, held.bs_hi), (new.bs_lo, new.bs_hi)),
        _axis_distance(route.ctx_repr, (held.ctx_lo, held.ctx_hi), (new.ctx_lo, new.ctx_hi)),
    )


class HysteresisPolicy:
    """A `KPolicy` that delays cell changes of `inner` (see the module docstring)."""

    def __init__(self, inner: KPolicy, persist_steps: int = 1, margin: float | None = None):
        HysteresisConfig(persist_steps, margin)  # validates
        self.inner = inner
        self.persist_steps = persist_steps
        self.margin = margin
        self._held: Bucket | None = None
        self._held_k = 0
        self._outside = 0  # consecutive steps the inner policy named another cell

    @property
    def max_k(self) -> int:
        return self.inner.max_k

    @property
    def held(self) -> Bucket | None:
        return self._held

    def _switches(self, route: RouteDecision, held: Bucket) -> bool:
        if self.persist_steps and self._outside >= self.persist_steps:
            return True
        return self.margin is not None and edge_distance(route, held) >= self.margin

    def decide(self, batch: BatchState) -> KDecision:
        decision = self.inner.decide(batch)
        route = decision.route
        if route is None:
            return decision
        # hold the K the inner policy chose (decision.step_k), not the route's lookup: an
        # adaptive inner policy's route names its prior schedule's K
        if self._held is None or route.bucket == self._held:
            self._held, self._held_k, self._outside = route.bucket, decision.step_k, 0
            return decision
        self._outside += 1
        if self._switches(route, self._held):
            self._held, self._held_k, self._outside = route.bucket, decision.step_k, 0
            return decision
        k = self._held_k
        held_route = RouteDecision(route.batch_size, route.pool, route.ctx_repr, self._held, k)
        return KDecision(capped([k] * len(batch), batch), k, held_route)

    def observe(self, outcome: StepOutcome) -> None:
        self.inner.observe(outcome)
