"""`SpeculativeConfig`: which drafter runs and the K policy that sizes its drafts every step.

Torch-free and validated without I/O, so bench, tune, demo and the CLI build it without loading
the engine. "No speculation" is not a separate engine mode: it is `DrafterKind.NONE` or a policy
that never emits K > 0 (`NO_SPECULATION`); the engine has one code path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from specsched.errors import UserError
from specsched.policy.config import PolicyConfig


class DrafterKind(str, Enum):
    NONE = "none"
    STREAMING = "streaming"  # MagicDec self-speculation: the target on a StreamingLLM window
    NGRAM = "ngram"  # prompt lookup, no model
    MODEL = "model"  # a separate small draft model at `draft_model`


MODEL_PREFIX = "model:"  # the command line's and experiment files' spelling: "model:PATH"
DRAFT_DTYPES = ("auto", "float32", "bfloat16", "int8")  # SpeculativeConfig.draft_dtype


def parse_drafter(text: str) -> tuple[DrafterKind, str | None]:
    """`streaming` | `ngram` | `none` | `model:PATH` -> (kind, draft model path or None)."""
    if text.startswith(MODEL_PREFIX):
        path = text[len(MODEL_PREFIX) :]
        if not path:
            raise UserError("drafter 'model:PATH' needs a path after 'model:'")
        return DrafterKind.MODEL, path
    try:
        kind = DrafterKind(text)
    except ValueError:
        raise UserError(
            f"unknown drafter {text!r}; use streaming, ngram, model:PATH or none"
        ) from None
    if kind is DrafterKind.MODEL:
        raise UserError("drafter 'model' needs a path: model:PATH")
    return kind, None


@dataclass(frozen=True, slots=True)
class SpeculativeConfig:
    """Speculative decoding settings (vLLM names where they exist).

    drafter / draft_model: the drafter kind; `MODEL` reads a small model from `draft_model`.
    window / num_sink_tokens: the StreamingLLM KV window of the `streaming` drafter (last W
        positions plus the first sinks; Xiao et al. 2023, arXiv:2309.17453; used as a
        self-speculation draft by MagicDec, arXiv:2408.11049).
    prompt_lookup_min / prompt_lookup_max: n-gram lengths of the `ngram` drafter.
    policy: how K is chosen every step (`specsched.policy`); default static K = 4.
    draft_dtype: the weights the `streaming` and `model` drafters read: "int8" (int8 rows with
        per-row scales through a native CPU kernel, plus a bf16 copy for drafts of more than 8
        rows where the CPU runs bf16 natively), "bfloat16" (a bf16 copy of the matmul weights),
        "float32" (the fp32 weights), or "auto" (int8 where its kernel builds, else bf16 where
        the device runs it natively: AVX512_BF16 / AMX on CPU, else fp32). Activations and KV
        stay fp32. Only the draft is approximated: verification stays with the fp32 target, so
        greedy output is unchanged. The engine reports what ran (`Speculator.draft_dtype`).
    """

    drafter: DrafterKind = DrafterKind.STREAMING
    draft_model: str | None = None
    window: int = 256
    num_sink_tokens: int = 4
    prompt_lookup_min: int = 1
    prompt_lookup_max: int = 4
    policy: PolicyConfig = field(default_factory=lambda: PolicyConfig.constant(4))
    draft_dtype: str = "auto"

    def __post_init__(self) -> None:
        if not isinstance(self.drafter, DrafterKind):
            raise UserError(f"drafter must be a DrafterKind (see parse_drafter), got "
                            f"{self.drafter!r}")
        if (self.drafter is DrafterKind.MODEL) != bool(self.draft_model):
            raise UserError("a draft_model path is given exactly when the drafter is 'model'")
        if self.window < 1:
            raise UserError(f"window must be >= 1, got {self.window}")
        if self.num_sink_tokens < 0:
            raise UserError(f"num_sink_tokens must be >= 0, got {self.num_sink_tokens}")
        if self.prompt_lookup_min < 1 or self.prompt_lookup_max < self.prompt_lookup_min:
            raise UserError(
                "need 1 <= prompt_lookup_min <= prompt_lookup_max, got "
                f"{self.prompt_lookup_min}, {self.prompt_lookup_max}"
            )
        if not isinstance(self.policy, PolicyConfig):
            raise UserError(f"policy must be a PolicyConfig, got {self.policy!r}")
        if self.draft_dtype not in DRAFT_DTYPES:
            raise UserError(f"draft_dtype must be one of {', '.join(DRAFT_DTYPES)}, got "
                            f"{self.draft_dtype!r}")

    @classmethod
    def from_flags(cls, drafter: str, policy: PolicyConfig, draft_dtype: str = "auto",
                   **options: int) -> SpeculativeConfig:
        """From the text spelling of the drafter (`model:PATH` included) and its options."""
        kind, path = parse_drafter(drafter)
        return cls(drafter=kind, draft_model=path, policy=policy, draft_dtype=draft_dtype,
                   **options)

    @property
    def drafter_label(self) -> str:
        """The drafter in its text spelling (`model:PATH` for a draft model)."""
        if self.drafter is DrafterKind.MODEL:
            return f"{MODEL_PREFIX}{self.draft_model}"
        return self.drafter.value

    @property
    def enabled(self) -> bool:
        """False when no step can ever speculate (no drafter, or the policy never emits K > 0)."""
        return self.drafter is not DrafterKind.NONE and self.policy.max_k > 0


NO_SPECULATION = SpeculativeConfig(drafter=DrafterKind.NONE, policy=PolicyConfig.constant(0))
