"""`SpeculativeConfig`: which drafter, its window, and the schedule that picks K every step.

"No speculation" is not a separate engine mode: it is `drafter="none"` or a schedule whose every
cell is K = 0; static K is the one-cell schedule `[[1, 1, K]]`. The engine has one code path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from specsched.errors import UserError
from specsched.router import CtxAgg
from specsched.schedule import Schedule, parse_schedule

MODEL_PREFIX = "model:"


class DrafterKind(str, Enum):
    NONE = "none"
    STREAMING = "streaming"  # MagicDec self-speculation: the target on a StreamingLLM window
    NGRAM = "ngram"  # prompt lookup, no model
    MODEL = "model"  # a separate small draft model: "model:PATH"


def static_schedule(k: int) -> Schedule:
    """K for every batch size and context (one 3-item entry; the tail inherits it)."""
    if k < 0:
        raise UserError(f"--k must be >= 0, got {k}")
    return parse_schedule([[1, 1, k]])


@dataclass(frozen=True, slots=True)
class SpeculativeConfig:
    """Speculative decoding settings (vLLM names where they exist).

    drafter: "streaming" (default), "ngram", "model:PATH" or "none".
    window / num_sink_tokens: the StreamingLLM KV window of the `streaming` drafter (last W
        positions plus the first sinks; Xiao et al. 2023, arXiv:2309.17453; used as a
        self-speculation draft by MagicDec, arXiv:2408.11049).
    schedule: K per (batch size, context) cell, looked up every step by `specsched.router`.
    ctx_agg: context representative of the decode pool. Default `mean`: the verify-attention
        microbenchmark (notes/microbench.md) measured this engine's ragged attention tracking
        Σctx = mean x B (R² 0.92, vs 0.43 for B x max), so mean is what the step pays for.
    per_request_k: each decoding request gets K from its own context in the batch-size row
        (ragged verify: request i verifies its own K_i + 1 tokens).
    prompt_lookup_min / prompt_lookup_max: n-gram lengths of the `ngram` drafter.
    """

    drafter: str = DrafterKind.STREAMING.value
    window: int = 256
    num_sink_tokens: int = 4
    schedule: Schedule = field(default_factory=lambda: static_schedule(4))
    ctx_agg: CtxAgg = CtxAgg.MEAN
    per_request_k: bool = False
    prompt_lookup_min: int = 1
    prompt_lookup_max: int = 4

    def __post_init__(self) -> None:
        kind = self.drafter_kind  # validates the name
        if kind is DrafterKind.MODEL and not self.draft_model:
            raise UserError("drafter 'model:PATH' needs a path after 'model:'")
        if self.window < 1:
            raise UserError(f"window must be >= 1, got {self.window}")
        if self.num_sink_tokens < 0:
            raise UserError(f"num_sink_tokens must be >= 0, got {self.num_sink_tokens}")
        if self.prompt_lookup_min < 1 or self.prompt_lookup_max < self.prompt_lookup_min:
            raise UserError(
                "need 1 <= prompt_lookup_min <= prompt_lookup_max, got "
                f"{self.prompt_lookup_min}, {self.prompt_lookup_max}"
            )
        object.__setattr__(self, "ctx_agg", CtxAgg(self.ctx_agg))

    @property
    def drafter_kind(self) -> DrafterKind:
        if self.drafter.startswith(MODEL_PREFIX):
            return DrafterKind.MODEL
        try:
            return DrafterKind(self.drafter)
        except ValueError:
            raise UserError(
                f"unknown drafter {self.drafter!r}; use streaming, ngram, model:PATH or none"
            ) from None

    @property
    def draft_model(self) -> str:
        """PATH of a `model:PATH` drafter ('' otherwise)."""
        return self.drafter[len(MODEL_PREFIX) :] if self.drafter.startswith(MODEL_PREFIX) else ""

    @property
    def enabled(self) -> bool:
        """False when no step can ever speculate (no drafter, or every cell K = 0)."""
        return self.drafter_kind is not DrafterKind.NONE and self.schedule.max_emitted_k > 0


NO_SPECULATION = SpeculativeConfig(drafter=DrafterKind.NONE.value, schedule=static_schedule(0))
