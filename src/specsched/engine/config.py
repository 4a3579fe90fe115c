"""Frozen, validated configs: the model architecture and the engine's memory/batching limits."""

from __future__ import annotations

from dataclasses import dataclass

from specsched.errors import UserError
from specsched.io import show_value

SUPPORTED_DTYPES: tuple[str, ...] = ("float32", "bfloat16", "float16")
DTYPE_BYTES: dict[str, int] = {"float32": 4, "bfloat16": 2, "float16": 2}
# Absolute bounds, checked before the model is even loaded (the model's own context and the KV
# cache's memory are checked once its config is known: `specsched.engine.memory`).
MAX_NUM_SEQS = 65_536  # slots of the preallocated KV cache; far above any CPU or GPU batch
MAX_MODEL_LEN = 1 << 24  # 16.7M tokens: beyond every model's context


@dataclass(frozen=True, slots=True)
class RopeScaling:
    """RoPE frequency scaling. `rope_type` is "llama3" or "linear" (HF config names)."""

    rope_type: str
    factor: float
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_position_embeddings: int = 8192

    def __post_init__(self) -> None:
        if self.rope_type not in ("llama3", "linear"):
            raise UserError(
                f"unsupported rope_scaling type {self.rope_type!r}; supported: llama3, linear"
            )
        if self.factor <= 0:
            raise UserError(f"rope_scaling factor must be > 0, got {self.factor}")


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """A Llama-family decoder: RMSNorm, RoPE, GQA attention, SwiGLU MLP."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    rope_scaling: RopeScaling | None = None
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = False
    attention_bias: bool = False  # Qwen2-style q/k/v bias
    bos_token_id: int | None = None
    eos_token_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for name in (
            "vocab_size",
            "hidden_size",
            "intermediate_size",
            "num_layers",
            "num_heads",
            "num_kv_heads",
            "head_dim",
            "max_position_embeddings",
        ):
            if getattr(self, name) <= 0:
                raise UserError(f"model config: {name} must be > 0, got {getattr(self, name)}")
        if self.num_heads % self.num_kv_heads != 0:
            raise UserError(
                f"model config: num_heads ({self.num_heads}) must be a multiple of "
                f"num_kv_heads ({self.num_kv_heads})"
            )
        if self.head_dim % 2 != 0:
            raise UserError(f"model config: head_dim must be even for RoPE, got {self.head_dim}")

    @property
    def max_context(self) -> int:
        """The longest context the model supports: max_position_embeddings; with "linear" RoPE
        scaling that x factor (positions are compressed); with "llama3" scaling the larger of
        it and original_max_position_embeddings x factor (HF configs already give the extended
        length there)."""
        rs = self.rope_scaling
        if rs is None:
            return self.max_position_embeddings
        if rs.rope_type == "linear":
            return int(self.max_position_embeddings * rs.factor)
        return max(self.max_position_embeddings,
                   int(rs.original_max_position_embeddings * rs.factor))

    @property
    def q_size(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.num_kv_heads * self.head_dim


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """Limits of one engine instance; the KV cache is max_num_seqs slots x max_model_len."""

    max_num_seqs: int = 8
    max_model_len: int = 2048
    max_num_batched_tokens: int = 512  # per-step token budget; longer prompts prefill in chunks
    enable_prefix_caching: bool = True
    block_size: int = 16  # prefix-cache granularity, in tokens
    dtype: str = "float32"
    device: str = "cpu"
    num_threads: int | None = None  # torch intra-op threads on CPU; None leaves torch's default
    compile: bool = False  # torch.compile the one-token (B=1 decode) step; see engine.compiled

    def __post_init__(self) -> None:
        if not 1 <= self.max_num_seqs <= MAX_NUM_SEQS:
            raise UserError(f"max_num_seqs must be in [1, {MAX_NUM_SEQS}], got "
                            f"{show_value(self.max_num_seqs)}")
        if not 2 <= self.max_model_len <= MAX_MODEL_LEN:
            raise UserError(f"max_model_len must be in [2, {MAX_MODEL_LEN}], got "
                            f"{show_value(self.max_model_len)}")
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise UserError(
                f"max_num_batched_tokens ({self.max_num_batched_tokens}) must be >= "
                f"max_num_seqs ({self.max_num_seqs}) so every running sequence can decode"
            )
        if self.block_size < 1:
            raise UserError(f"block_size must be >= 1, got {self.block_size}")
        if self.dtype not in SUPPORTED_DTYPES:
            raise UserError(f"dtype {self.dtype!r} not supported; use one of {SUPPORTED_DTYPES}")
        if not (self.device == "cpu" or self.device.startswith("cuda")):
            raise UserError(f"device {self.device!r} not supported; use 'cpu' or 'cuda[:N]'")
        if self.num_threads is not None and self.num_threads < 1:
            raise UserError(f"num_threads must be >= 1, got {self.num_threads}")
