"""Attention kernels timed by the microbenchmark: one verify step, all layers, one call.

Every kernel computes, for each of the B sequences, the attention of its q = K+1 verify queries
(num_spec_tokens + 1) against its own ctx_i + q keys (causal inside the verify tail), for
`num_layers` layers. Layer l reads its own cache `l % num_distinct` (distinct caches up to a
memory cap, so the sweep streams from memory the way a real step does, instead of re-reading one
layer's cache from CPU/GPU caches). Writing the new K/V is not timed: it costs B x q in every shape.

- `engine`: `specsched.engine.layers.attention.ragged_attention` over the per-slot cache
  `[S, Hkv, max_model_len, D]`: one SDPA per sequence per layer, reads Σctx.
- `padded`: one SDPA over `[B, Hkv, max ctx + q, D]` (the same per-slot cache, sliced) with a
  causal key-padding mask: reads B x max ctx.
- `nested`: SDPA on jagged nested tensors over a packed (varlen) KV buffer `[Σ(ctx+q), Hkv, D]`
  (the vLLM-style layout); the verify tail is not causally masked (<= q² extra products).
- `flex`: compiled FlexAttention with a document + causal block mask over the packed buffer.
- `flash_varlen`: `flash_attn_varlen_func` (CUDA, fp16/bf16, flash-attn installed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import torch
import torch.nn.functional as F

from specsched.engine.layers.attention import build_metadata, ragged_attention
from specsched.microbench.geometry import AttentionGeometry
from specsched.microbench.shapes import BatchShape

StepFn = Callable[[], torch.Tensor]  # runs all layers, returns the last layer's output


class KernelKind(str, Enum):
    ENGINE = "engine"
    PADDED = "padded"
    NESTED = "nested"
    FLEX = "flex"
    FLASH_VARLEN = "flash_varlen"

    @property
    def uses_packed(self) -> bool:
        return self in (KernelKind.NESTED, KernelKind.FLEX, KernelKind.FLASH_VARLEN)


def default_kernels(device: torch.device) -> tuple[KernelKind, ...]:
    """CUDA: everything. CPU: engine and padded; `nested` (torch's CPU jagged SDPA runs 10-15x
    slower than the engine's loop) and `flex` (a ~30 s C++ compile per shape) are opt-in."""
    if device.type == "cuda":
        return tuple(KernelKind)
    return (KernelKind.ENGINE, KernelKind.PADDED)


def unavailable_reason(kind: KernelKind, device: torch.device, dtype: torch.dtype) -> str | None:
    """Why `kind` cannot run here, or None."""
    if kind is KernelKind.FLASH_VARLEN:
        if device.type != "cuda":
            return "flash-attn varlen needs CUDA"
        if dtype not in (torch.float16, torch.bfloat16):
            return "flash-attn needs float16 or bfloat16"
        try:
            import flash_attn  # noqa: F401
        except ImportError:
            return "flash-attn is not installed"
    if kind is KernelKind.FLEX:
        try:
            from torch.nn.attention import flex_attention  # noqa: F401
        except ImportError:
            return f"torch {torch.__version__} has no FlexAttention"
    return None


@dataclass(slots=True)
class KvStore:
    """Distinct per-layer caches, filled with random K/V; layer l uses index l % num_distinct."""

    slot_k: list[torch.Tensor]  # each [S, Hkv, L, D]
    slot_v: list[torch.Tensor]
    packed_k: list[torch.Tensor]  # each [capacity, Hkv, D]
    packed_v: list[torch.Tensor]
    num_distinct: int


def allocate_store(
    geo: AttentionGeometry,
    batch_size: int,
    max_len: int,
    packed_capacity: int,
    kernels: tuple[KernelKind, ...],
    max_cache_bytes: int,
    dtype: torch.dtype,
    device: torch.device,
    seed: int,
) -> KvStore:
    """Allocate as many distinct layer caches as fit in `max_cache_bytes` (at least one)."""
    esize = torch.empty((), dtype=dtype).element_size()
    need_slot = any(not k.uses_packed for k in kernels)
    need_packed = any(k.uses_packed for k in kernels)
    per_token = geo.kv_bytes_per_token_layer(esize)
    per_layer = per_token * (
        batch_size * max_len * need_slot + packed_capacity * need_packed
    )
    num = max(1, min(geo.num_layers, max_cache_bytes // max(per_layer, 1)))
    gen = torch.Generator(device=device).manual_seed(seed)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=gen, dtype=dtype, device=device)

    hkv, d = geo.num_kv_heads, geo.head_dim
    slot_shape = (batch_size, hkv, max_len, d)
    packed_shape = (packed_capacity, hkv, d)
    return KvStore(
        slot_k=[rand(*slot_shape) for _ in range(num)] if need_slot else [],
        slot_v=[rand(*slot_shape) for _ in range(num)] if need_slot else [],
        packed_k=[rand(*packed_shape) for _ in range(num)] if need_packed else [],
        packed_v=[rand(*packed_shape) for _ in range(num)] if need_packed else [],
        num_distinct=num,
    )


def verify_queries(
    shape: BatchShape, geo: AttentionGeometry, q: int, like: torch.Tensor
) -> torch.Tensor:
    """The same random queries for every kernel (seeded): [B, q, Hq, D]."""
    gen = torch.Generator(device=like.device).manual_seed(1234)
    dims = (shape.batch_size, q, geo.num_heads, geo.head_dim)
    return torch.randn(dims, generator=gen, dtype=like.dtype, device=like.device)


def _engine(shape: BatchShape, geo: AttentionGeometry, q: int, store: KvStore) -> StepFn:
    b, dev = shape.batch_size, store.slot_k[0].device
    meta = build_metadata(list(range(b)), list(shape.contexts), [q] * b, dev)
    query = verify_queries(shape, geo, q, store.slot_k[0]).reshape(b * q, geo.num_heads, -1)

    def step() -> torch.Tensor:
        out = query
        for layer in range(geo.num_layers):
            i = layer % store.num_distinct
            out = ragged_attention(query, store.slot_k[i], store.slot_v[i], meta, geo.scale)
        return out  # [B*q, Hq, D]

    return step


def _padded(shape: BatchShape, geo: AttentionGeometry, q: int, store: KvStore) -> StepFn:
    b, g, dev = shape.batch_size, geo.group, store.slot_k[0].device
    length = shape.max_ctx + q
    ctx = torch.tensor(shape.contexts, device=dev)  # [B]
    query_pos = ctx[:, None] + torch.arange(q, device=dev)[None, :]  # [B, q]
    query_pos = query_pos.repeat(1, g)  # [B, G*q], row g*q + j is query j
    mask = torch.arange(length, device=dev)[None, None, :] <= query_pos[:, :, None]  # [B, G*q, L]
    mask = mask[:, None]  # [B, 1, G*q, L]
    # Query heads sharing a KV head are stacked as rows, as the engine does: no K/V repeat.
    base = verify_queries(shape, geo, q, store.slot_k[0])  # [B, q, Hq, D]
    query = (
        base.view(b, q, geo.num_kv_heads, g, geo.head_dim)
        .permute(0, 2, 3, 1, 4)
        .reshape(b, geo.num_kv_heads, g * q, geo.head_dim)
    )  # [B, Hkv, G*q, D]

    def step() -> torch.Tensor:
        out = query
        for layer in range(geo.num_layers):
            i = layer % store.num_distinct
            k = store.slot_k[i][:b, :, :length]  # [B, Hkv, max+q, D] view
            v = store.slot_v[i][:b, :, :length]
            out = F.scaled_dot_product_attention(query, k, v, attn_mask=mask, scale=geo.scale)
        return out  # [B, Hkv, G*q, D]

    return step


def _offsets(lengths: list[int], device: torch.device) -> torch.Tensor:
    return torch.tensor([0, *lengths], device=device).cumsum(0)  # [B+1] int64


def _nested(shape: BatchShape, geo: AttentionGeometry, q: int, store: KvStore) -> StepFn:
    b, g, dev = shape.batch_size, geo.group, store.packed_k[0].device
    kv_lens = [c + q for c in shape.contexts]
    total = sum(kv_lens)
    kv_off = _offsets(kv_lens, dev)
    q_off = _offsets([g * q] * b, dev)
    base = verify_queries(shape, geo, q, store.packed_k[0])  # [B, q, Hq, D]
    query_vals = (
        base.view(b, q, geo.num_kv_heads, g, geo.head_dim)
        .permute(0, 3, 1, 2, 4)
        .reshape(b * g * q, geo.num_kv_heads, geo.head_dim)
    )  # per sequence, row g*q + j is query j of head group g
    query = torch.nested.nested_tensor_from_jagged(query_vals, q_off).transpose(1, 2)
    keys = [
        torch.nested.nested_tensor_from_jagged(t[:total], kv_off).transpose(1, 2)
        for t in store.packed_k
    ]  # each [B, Hkv, j, D]
    values = [
        torch.nested.nested_tensor_from_jagged(t[:total], kv_off).transpose(1, 2)
        for t in store.packed_v
    ]

    def step() -> torch.Tensor:
        out = query
        for layer in range(geo.num_layers):
            i = layer % store.num_distinct
            out = F.scaled_dot_product_attention(query, keys[i], values[i], scale=geo.scale)
        return out  # nested [B, Hkv, G*q (jagged), D]

    return step


def _flex(shape: BatchShape, geo: AttentionGeometry, q: int, store: KvStore) -> StepFn:
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    # Every shape runs over the whole packed buffer (the same capacity for all shapes), its tail
    # past Σ(ctx+q) masked out: the tensors keep one size, so the kernel compiles once (one size
    # per shape hit dynamo's recompile limit after 8 shapes on an H200 and fell back to the
    # unfused path), and the block mask skips the masked tail's KV blocks, so time follows the
    # blocks a shape really reads.
    b, dev = shape.batch_size, store.packed_k[0].device
    kv_lens = [c + q for c in shape.contexts]
    total, capacity = sum(kv_lens), store.packed_k[0].shape[0]
    seq_ids = torch.arange(b, device=dev)
    doc_q = seq_ids.repeat_interleave(q)  # [B*q]
    ctx = torch.tensor(shape.contexts, device=dev)
    pos_q = (ctx[:, None] + torch.arange(q, device=dev)[None, :]).reshape(-1)  # [B*q]
    doc_k = torch.full((capacity,), -1, dtype=torch.long, device=dev)  # [capacity]; -1: tail
    doc_k[:total] = seq_ids.repeat_interleave(torch.tensor(kv_lens, device=dev))
    pos_k = torch.zeros(capacity, dtype=torch.long, device=dev)  # [capacity]
    pos_k[:total] = torch.arange(total, device=dev) - _offsets(kv_lens, dev)[doc_k[:total]]

    def mask_mod(
        bi: torch.Tensor, h: torch.Tensor, qi: torch.Tensor, ki: torch.Tensor
    ) -> torch.Tensor:
        return (doc_q[qi] == doc_k[ki]) & (pos_k[ki] <= pos_q[qi])

    block_mask = create_block_mask(mask_mod, None, None, b * q, capacity, device=str(dev))
    kernel = torch.compile(flex_attention, dynamic=False)
    base = verify_queries(shape, geo, q, store.packed_k[0])  # [B, q, Hq, D]
    query = base.reshape(b * q, geo.num_heads, -1).transpose(0, 1).unsqueeze(0)  # [1, Hq, B*q, D]
    keys = [t.permute(1, 0, 2).unsqueeze(0) for t in store.packed_k]  # [1, Hkv, capacity, D]
    values = [t.permute(1, 0, 2).unsqueeze(0) for t in store.packed_v]

    def step() -> torch.Tensor:
        out = query
        for layer in range(geo.num_layers):
            i = layer % store.num_distinct
            out = kernel(
                query, keys[i], values[i], block_mask=block_mask, scale=geo.scale, enable_gqa=True
            )
        return out  # [1, Hq, B*q, D]

    return step


def _flash_varlen(shape: BatchShape, geo: AttentionGeometry, q: int, store: KvStore) -> StepFn:
    from flash_attn import flash_attn_varlen_func

    b, dev = shape.batch_size, store.packed_k[0].device
    kv_lens = [c + q for c in shape.contexts]
    total = sum(kv_lens)
    cu_k = _offsets(kv_lens, dev).to(torch.int32)
    cu_q = _offsets([q] * b, dev).to(torch.int32)
    query = verify_queries(shape, geo, q, store.packed_k[0]).reshape(b * q, geo.num_heads, -1)

    def step() -> torch.Tensor:
        out = query
        for layer in range(geo.num_layers):
            i = layer % store.num_distinct
            out = flash_attn_varlen_func(
                query, store.packed_k[i][:total], store.packed_v[i][:total], cu_q, cu_k,
                q, max(kv_lens), softmax_scale=geo.scale, causal=True,  # bottom-right causal
            )
        return out  # [B*q, Hq, D]

    return step


BUILDERS: dict[KernelKind, Callable[[BatchShape, AttentionGeometry, int, KvStore], StepFn]] = {
    KernelKind.ENGINE: _engine,
    KernelKind.PADDED: _padded,
    KernelKind.NESTED: _nested,
    KernelKind.FLEX: _flex,
    KernelKind.FLASH_VARLEN: _flash_varlen,
}


def build_step(
    kind: KernelKind, shape: BatchShape, geo: AttentionGeometry, q: int, store: KvStore
) -> StepFn:
    """A no-argument callable running one verify step's attention over all layers."""
    return BUILDERS[kind](shape, geo, q, store)
