"""Open-loop K from a schedule: K by batch size x context, per step or per request.

Per step (vLLM's DSD and the upstream proposal): the batch size is the number of scheduled
requests (prefill chunks included, as vLLM's `len(num_scheduled_tokens)`); the decode pool's
contexts are summarized by `ctx_agg` (`route`). Per request: each request's own context picks K in
the batch size's row (`route_per_request`; ragged verify). Then the caps (`caps.capped_k`).
No torch here.
"""

from __future__ import annotations

from dataclasses import dataclass

from specsched.policy.batch import BatchState, KDecision, StepOutcome
from specsched.policy.caps import capped
from specsched.policy.route import CtxAgg, route, route_per_request
from specsched.schedule.model import Schedule


@dataclass(frozen=True, slots=True)
class SchedulePolicy:
    """A `KPolicy` that reads a schedule and learns nothing."""

    schedule: Schedule
    ctx_agg: CtxAgg = CtxAgg.MEAN
    per_request_k: bool = False

    @property
    def max_k(self) -> int:
        return self.schedule.max_emitted_k

    def decide(self, batch: BatchState) -> KDecision:
        if self.per_request_k:
            ks = route_per_request(self.schedule, batch.num_computed_tokens)
            step_k = max((k for i, k in enumerate(ks) if batch.is_decoding(i)), default=0)
            return KDecision(capped(ks, batch), step_k)
        decision = route(self.schedule, batch.num_computed_tokens, batch.num_prompt_tokens,
                         self.ctx_agg)
        return KDecision(capped([decision.k] * len(batch), batch), decision.k, decision)

    def observe(self, outcome: StepOutcome) -> None:
        """Open loop: outcomes change nothing."""
