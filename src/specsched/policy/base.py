"""The K-policy interface: `decide(batch) -> KDecision` every step, `observe(outcome)` after it.

Every caller that needs K — the engine's speculator, the bench dry-run, vLLM's scheduler class,
`specsched route` — holds a `KPolicy` and asks it; nothing else looks K up in a schedule. Static
policies ignore `observe`; a closed-loop policy learns acceptance and step cost from it.
No torch here.
"""

from __future__ import annotations

from typing import Protocol

from specsched.policy.batch import BatchState, KDecision, StepOutcome


class KPolicy(Protocol):
    """Turns a batch into K per request (and one K per step) and learns from outcomes."""

    def decide(self, batch: BatchState) -> KDecision: ...

    def observe(self, outcome: StepOutcome) -> None: ...

    @property
    def max_k(self) -> int:
        """The largest K `decide` can return (sizes draft buffers, vLLM's K table)."""
        ...
