"""`PolicyConfig`: which K policy runs and its settings; `build()` makes the policy.

One frozen, validated value that every layer carries unchanged — `SpeculativeConfig` (engine),
experiment arms (bench), the vLLM integration config — so "how K is chosen" is described once.
No torch here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from specsched.errors import UserError
from specsched.policy.adaptive import AdaptivePolicy
from specsched.policy.adaptive_config import AdaptiveConfig
from specsched.policy.base import KPolicy
from specsched.policy.route import CtxAgg
from specsched.policy.static import SchedulePolicy
from specsched.schedule.model import Schedule


class PolicyKind(str, Enum):
    STATIC = "static"  # open loop: K from the schedule (`SchedulePolicy`)
    ADAPTIVE = "adaptive"  # closed loop: learns acceptance and cost (`AdaptivePolicy`)


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    """schedule: K per (batch size, context) cell; `Schedule.constant(k)` for static K.
    ctx_agg: the decode pool's context representative (batch mode). Default `mean`: the
        verify-attention microbenchmark (notes/microbench.md) measured this engine's attention
        tracking Σctx = mean x B (R² 0.92, vs 0.43 for B x max).
    per_request_k: each decoding request gets K from its own context in the batch-size row
        (static), or its own goodput-optimal K (adaptive); else one K per step.
    kind / adaptive: `ADAPTIVE` learns online (`adaptive.AdaptivePolicy`) with the schedule as
        its prior (the K that new requests start from, and that decides until the cost model has
        seen enough steps when there is no profile).
    """

    schedule: Schedule = field(default_factory=lambda: Schedule.constant(0))
    ctx_agg: CtxAgg = CtxAgg.MEAN
    per_request_k: bool = False
    kind: PolicyKind = PolicyKind.STATIC
    adaptive: AdaptiveConfig | None = None  # ADAPTIVE only; None: AdaptiveConfig() defaults

    def __post_init__(self) -> None:
        if not isinstance(self.schedule, Schedule):
            raise UserError(f"policy: schedule must be a Schedule, got {self.schedule!r}")
        if not isinstance(self.ctx_agg, CtxAgg):
            raise UserError(f"policy: ctx_agg must be a CtxAgg (mean, median, max), got "
                            f"{self.ctx_agg!r}")
        if not isinstance(self.kind, PolicyKind):
            raise UserError(f"policy: kind must be a PolicyKind, got {self.kind!r}")
        if self.adaptive is not None and self.kind is not PolicyKind.ADAPTIVE:
            raise UserError("policy: adaptive settings given for a static policy")

    @classmethod
    def constant(cls, k: int) -> PolicyConfig:
        """Static K for every batch and context (K = 0: no speculation)."""
        return cls(schedule=Schedule.constant(k))

    @property
    def is_adaptive(self) -> bool:
        return self.kind is PolicyKind.ADAPTIVE

    @property
    def adaptive_config(self) -> AdaptiveConfig:
        return self.adaptive or AdaptiveConfig()

    @property
    def max_k(self) -> int:
        """The largest K the policy can emit."""
        if self.is_adaptive:
            return self.adaptive_config.max_k
        return self.schedule.max_emitted_k

    def build(self) -> KPolicy:
        """A fresh policy (closed-loop policies start with their prior, nothing learned)."""
        prior = SchedulePolicy(self.schedule, self.ctx_agg, self.per_request_k)
        if self.is_adaptive:
            return AdaptivePolicy(self.adaptive_config, prior, self.per_request_k)
        return prior
