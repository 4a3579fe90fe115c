"""How K is chosen: the one room that turns a step's batch into K (no torch).

A caller builds a `BatchState` (columns: each request's `num_computed_tokens`, `num_prompt_tokens`
and room left) and asks a `KPolicy` for a `KDecision` (K per request and one K per step); after the
step it may report a `StepOutcome` to `observe`. `PolicyConfig` describes the policy and builds it.

- `batch`: the values that cross the boundary (batch in, decision out, outcome back).
- `route`: schedule lookup for one batch (decode pool, context representative, per request).
- `caps`: the prefill and room caps every K passes.
- `base`: the `KPolicy` interface; `static`: the schedule policy; `config`: `PolicyConfig`.
- `adaptive` (+ `adaptive_config`, `adaptive_acceptance`, `adaptive_choice`, `adaptive_guard`,
  `adaptive_trust`, `acceptance_stats`, `cost`, `optimize`, `drain`): the closed-loop policy:
  online acceptance and step-cost estimates, goodput-optimal K (`adaptive_choice`), guard.
"""

from __future__ import annotations

from specsched.policy.adaptive import AdaptivePolicy
from specsched.policy.adaptive_config import AdaptiveConfig
from specsched.policy.base import KPolicy
from specsched.policy.batch import BatchState, KDecision, RequestOutcome, StepOutcome
from specsched.policy.caps import capped, draft_room
from specsched.policy.config import PolicyConfig, PolicyKind
from specsched.policy.freeze import freeze_schedule
from specsched.policy.route import (
    CtxAgg,
    PoolKind,
    RouteDecision,
    context_representative,
    decode_pool,
    route,
    route_per_request,
)
from specsched.policy.static import SchedulePolicy

__all__ = [
    "AdaptiveConfig",
    "AdaptivePolicy",
    "BatchState",
    "CtxAgg",
    "KDecision",
    "KPolicy",
    "PolicyConfig",
    "PolicyKind",
    "PoolKind",
    "RequestOutcome",
    "RouteDecision",
    "SchedulePolicy",
    "StepOutcome",
    "capped",
    "context_representative",
    "decode_pool",
    "draft_room",
    "freeze_schedule",
    "route",
    "route_per_request",
]
