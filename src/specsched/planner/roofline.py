"""Analytic roofline cost model (MagicDec, arXiv:2408.11049) to plan for hardware you don't have.

Assumptions (also in notes/planner.md):
1. One forward over B sequences, each adding q new tokens on top of ctx cached tokens, is two
   roofline terms summed: the linear layers (time = max(weight bytes / bandwidth,
   2 x matmul params x B x q / peak FLOPs)) and attention (time = max(B x ctx x KV bytes per token
   / bandwidth, 4 x layers x heads x head_dim x B x q x ctx / peak FLOPs)). Each term is whichever
   of memory or compute is slower; the two terms do not overlap. Plus a fixed overhead per forward
   (kernel launches, sampling, scheduling: `step_overhead_ms`).
2. Bandwidth and FLOPs are datasheet peaks (dense bf16/fp16 tensor FLOPs, no sparsity) scaled by
   achievable fractions (`bandwidth_efficiency`, `compute_efficiency`).
3. Weight bytes = every matmul parameter read once per forward (the LM head included; the input
   embedding gather is negligible). Activations, norms, RoPE, the KV write of the q new tokens and
   the sampler are ignored. KV bytes per token = 2 (K and V) x layers x kv_heads x head_dim x bytes.
4. Plain decode: one forward with q = 1. Verify: one forward with q = K + 1. Draft, StreamingLLM
   self-speculation (MagicDec): K forwards of the *target* with q = 1 over a KV window of
   min(ctx, window) tokens (attention sinks + recent tokens). Draft, separate small model: K
   forwards of that model with q = 1 over the full ctx (its own KV cache). A speculative step is
   draft + verify, run back to back (no overlap).
5. The model predicts time only. Acceptance is *not* modelled: give it (per draft position, or one
   constant) or accept the stated default assumption (`DEFAULT_ACCEPTANCE`, constant across
   positions and contexts), close to MagicDec's StreamingLLM figures (0.84 -> 0.79 from 4K to 100K).
6. Tensor parallelism, quantized KV, and memory capacity (whether B x ctx fits) are not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from specsched.errors import UserError
from specsched.planner.profile import (
    AcceptancePoint,
    Profile,
    ProfileGrid,
    ProfileMetadata,
    ProfileSource,
    Stat,
    TimingPoint,
)

DEFAULT_ACCEPTANCE = 0.8


@dataclass(frozen=True, slots=True)
class HardwareSpec:
    """Datasheet figures of one accelerator. Bandwidth in GB/s (1e9 B/s), peak in dense TFLOPS."""

    name: str
    mem_bandwidth_gbps: float
    peak_tflops: float
    memory_gb: float | None = None
    bandwidth_efficiency: float = 0.8
    compute_efficiency: float = 0.6
    step_overhead_ms: float = 0.3

    def __post_init__(self) -> None:
        if self.mem_bandwidth_gbps <= 0 or self.peak_tflops <= 0:
            raise UserError(f"hardware {self.name!r}: bandwidth and peak TFLOPS must be > 0")
        for what, v in (
            ("bandwidth", self.bandwidth_efficiency),
            ("compute", self.compute_efficiency),
        ):
            if not 0 < v <= 1:
                raise UserError(
                    f"hardware {self.name!r}: {what}_efficiency must be in (0, 1], got {v}"
                )
        if self.step_overhead_ms < 0:
            raise UserError(f"hardware {self.name!r}: step_overhead_ms must be >= 0")

    @property
    def bytes_per_s(self) -> float:
        return self.mem_bandwidth_gbps * 1e9 * self.bandwidth_efficiency

    @property
    def flops_per_s(self) -> float:
        return self.peak_tflops * 1e12 * self.compute_efficiency


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A Llama-family decoder's shape. Bytes per weight / per KV element (2 = bf16)."""

    name: str
    num_layers: int
    hidden_size: int
    intermediate_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    tie_word_embeddings: bool = False
    weight_bytes: float = 2.0
    kv_bytes: float = 2.0

    def __post_init__(self) -> None:
        for f in (
            "num_layers",
            "hidden_size",
            "intermediate_size",
            "num_heads",
            "num_kv_heads",
            "head_dim",
            "vocab_size",
        ):
            if getattr(self, f) < 1:
                raise UserError(f"model {self.name!r}: {f} must be >= 1")
        if self.num_heads % self.num_kv_heads:
            raise UserError(f"model {self.name!r}: num_heads must be a multiple of num_kv_heads")
        if self.weight_bytes <= 0 or self.kv_bytes <= 0:
            raise UserError(f"model {self.name!r}: weight_bytes and kv_bytes must be > 0")

    @property
    def layer_params(self) -> int:
        d, hd = self.hidden_size, self.head_dim
        attn = d * self.num_heads * hd * 2 + d * self.num_kv_heads * hd * 2  # q, o + k, v
        return attn + 3 * d * self.intermediate_size  # SwiGLU: gate, up, down

    @property
    def matmul_params(self) -> int:
        """Parameters multiplied per token: all layers + the LM head."""
        return self.num_layers * self.layer_params + self.vocab_size * self.hidden_size

    @property
    def kv_bytes_per_token(self) -> float:
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * self.kv_bytes


class DraftKind(str, Enum):
    STREAMING = "streaming"  # the target itself over a StreamingLLM KV window (MagicDec)
    MODEL = "model"  # a separate small draft model with its own full KV cache


@dataclass(frozen=True, slots=True)
class DraftSpec:
    kind: DraftKind = DraftKind.STREAMING
    window: int = 512  # StreamingLLM KV budget (sink + recent tokens)
    model: ModelSpec | None = None

    def __post_init__(self) -> None:
        if self.kind is DraftKind.STREAMING and self.window < 1:
            raise UserError(f"draft window must be >= 1, got {self.window}")
        if self.kind is DraftKind.MODEL and self.model is None:
            raise UserError("a separate-model drafter needs a model spec")

    def describe(self) -> str:
        if self.kind is DraftKind.STREAMING:
            return f"streaming self-draft (window {self.window})"
        assert self.model is not None
        return f"draft model {self.model.name}"


def forward_time_ms(hw: HardwareSpec, model: ModelSpec, batch_size: int, q: int, ctx: int) -> float:
    """One forward: B sequences x q new tokens over ctx cached tokens (assumptions 1-3)."""
    b = batch_size
    w_bytes = model.matmul_params * model.weight_bytes
    w_flops = 2.0 * model.matmul_params * b * q
    t_linear = max(w_bytes / hw.bytes_per_s, w_flops / hw.flops_per_s)
    kv_read = b * ctx * model.kv_bytes_per_token
    attn_flops = 4.0 * model.num_layers * model.num_heads * model.head_dim * b * q * ctx
    t_attn = max(kv_read / hw.bytes_per_s, attn_flops / hw.flops_per_s)
    return (t_linear + t_attn) * 1e3 + hw.step_overhead_ms


def nospec_time_ms(hw: HardwareSpec, target: ModelSpec, batch_size: int, ctx: int) -> float:
    return forward_time_ms(hw, target, batch_size, 1, ctx)


def verify_time_ms(hw: HardwareSpec, target: ModelSpec, batch_size: int, ctx: int, k: int) -> float:
    return forward_time_ms(hw, target, batch_size, k + 1, ctx)


def draft_time_ms(
    hw: HardwareSpec, target: ModelSpec, draft: DraftSpec, batch_size: int, ctx: int, k: int
) -> float:
    """K draft forwards (assumption 4); 0 for K = 0."""
    if k == 0:
        return 0.0
    if draft.kind is DraftKind.STREAMING:
        return k * forward_time_ms(hw, target, batch_size, 1, min(ctx, draft.window))
    assert draft.model is not None
    return k * forward_time_ms(hw, draft.model, batch_size, 1, ctx)


def roofline_profile(
    hw: HardwareSpec,
    target: ModelSpec,
    draft: DraftSpec,
    grid: ProfileGrid,
    acceptance: tuple[float, ...] | None = None,
) -> Profile:
    """A complete `Profile` from the model: T per grid point, acceptance assumed (assumption 5).

    `acceptance`: conditional rate per draft position (one value = the same at every position);
    None = DEFAULT_ACCEPTANCE. The same acceptance is used at every context."""
    max_k = grid.ks[-1]
    a = acceptance or (DEFAULT_ACCEPTANCE,)
    if len(a) == 1:
        a = a * max(max_k, 1)
    if len(a) < max_k:
        raise UserError(f"acceptance gives {len(a)} positions, the grid's largest K is {max_k}")
    points: list[TimingPoint] = []
    for c in grid.contexts:
        for b in grid.batch_sizes:
            for k in grid.ks:
                if k == 0:
                    points.append(
                        TimingPoint(b, c, 0, Stat(nospec_time_ms(hw, target, b, c), 0, 0))
                    )
                    continue
                tv = verify_time_ms(hw, target, b, c, k)
                td = draft_time_ms(hw, target, draft, b, c, k)
                points.append(
                    TimingPoint(b, c, k, Stat(tv + td, 0, 0), Stat(tv, 0, 0), Stat(td, 0, 0))
                )
    meta = ProfileMetadata(
        model=target.name,
        drafter=draft.describe(),
        dtype=f"{target.weight_bytes:g}-byte weights, {target.kv_bytes:g}-byte KV",
        device=hw.name,
        source=ProfileSource.ROOFLINE,
        notes=(
            f"roofline: {hw.mem_bandwidth_gbps:g} GB/s x {hw.bandwidth_efficiency:g}, "
            f"{hw.peak_tflops:g} TFLOPS x {hw.compute_efficiency:g}, overhead "
            f"{hw.step_overhead_ms:g} ms/forward; acceptance assumed {list(a[: max(max_k, 1)])}"
        ),
    )
    acc = tuple(AcceptancePoint(c, tuple(a), 0) for c in grid.contexts) if max_k else ()
    return Profile(meta, grid, tuple(points), acc)
