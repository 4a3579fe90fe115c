"""Ragged attention over a per-slot KV cache: a pure function of explicit metadata.

Layout. Each layer's cache is `k_cache, v_cache: [num_slots, Hkv, max_model_len, D]`. A batch is
ragged (`specsched.engine.layers.metadata`): sequence i brings q_i new tokens at positions
start_i .. start_i + q_i - 1 in slot `slot_ids[i]`, flattened sequence-major to `[T, ...]`.

Cost. Attention work and memory traffic scale with **Σ_i q_i x ctx_i (Σctx for decode)**, not
with B x max ctx. Paths, chosen per step:
- native kernel (`cpu_kernels.ragged_attention_cpu`, CPU fp32 with AVX-512: `cpu_kernels.
  preferred`): every sequence whose G x q
  query rows fit (decode, speculative verify) in ONE call per layer, reading only its own
  `k_cache[slot_i, :, :ctx_i]`; its per-context-token cost is the same for q = 1 and any
  G x q <= 16 (the query rows are vector lanes). Sequences with longer q (prefill chunks) in the
  same batch take the per-sequence loop below.
- SDPA (`sdpa_attention`; other devices and dtypes, no compiler, prefill): one token -> one SDPA
  call on the slot's view (`single_token_attention`); same q for all, contiguous slots and
  padding <= DENSE_MAX_PADDING x Σctx -> one masked SDPA over `k_cache[s0:s0+B, :, :max_ctx]`
  (dense); otherwise one SDPA per sequence on its view (ragged loop).

KV windows (StreamingLLM-style drafters). `kv_ranges[i]` may list the cache position ranges
`(start, end)` sequence i attends to, e.g. `((0, 4), (ctx - W, ctx))` for 4 sinks + last W. Only
those positions are gathered (index_select), so the cost is O(window), not a masked full read.
The ranges must cover the sequence's own new tokens. Causality is enforced by position: a query
at position p sees keys at positions <= p. When every sequence brings one token (the drafting
case) the windows of all sequences are gathered at once into `[B, Hkv, max W, D]` (one gather and
one SDPA per layer, shorter windows masked), still O(Σ window).

Rollback. Lowering a slot's length (num_computed_tokens) is the whole rollback: positions past
it are simply overwritten by the next write.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from specsched.engine.layers import cpu_kernels
from specsched.engine.layers.metadata import (
    DENSE_MAX_PADDING,
    AttentionMetadata,
    KVRanges,
    build_metadata,
)

__all__ = [
    "DENSE_MAX_PADDING",
    "AttentionMetadata",
    "KVRanges",
    "build_metadata",
    "ragged_attention",
    "sdpa_attention",
    "single_token_attention",
    "write_kv",
]


def write_kv(
    k_cache: torch.Tensor,  # [S, Hkv, L, D]
    v_cache: torch.Tensor,  # [S, Hkv, L, D]
    k: torch.Tensor,  # [T, Hkv, D]
    v: torch.Tensor,  # [T, Hkv, D]
    meta: AttentionMetadata,
) -> None:
    """Scatter the new tokens' K/V into their slots at their positions."""
    if len(meta.query_lens) == 1 and meta.query_lens[0] == 1:  # one token: plain indexing
        slot, pos = meta.slot_ids[0], meta.start_positions[0]
        k_cache[slot, :, pos] = k[0]
        v_cache[slot, :, pos] = v[0]
        return
    k_cache[meta.token_slots, :, meta.token_positions] = k
    v_cache[meta.token_slots, :, meta.token_positions] = v


def ragged_attention(
    q: torch.Tensor,  # [T, Hq, D]
    k_cache: torch.Tensor,  # [S, Hkv, L, D]
    v_cache: torch.Tensor,  # [S, Hkv, L, D]
    meta: AttentionMetadata,
    scale: float,
) -> torch.Tensor:  # [T, Hq, D]
    """Causal GQA attention of each sequence's new queries against its own cached keys."""
    if not (cpu_kernels.available(q, k_cache) and cpu_kernels.preferred()):
        return sdpa_attention(q, k_cache, v_cache, meta, scale)
    meta.check_cache(k_cache)
    num_heads, num_kv_heads = q.shape[1], k_cache.shape[1]
    plan = meta.kernel_plan(cpu_kernels.MAX_ROWS * num_kv_heads // num_heads, num_kv_heads,
                            torch.get_num_threads())
    if not plan.native:
        return sdpa_attention(q, k_cache, v_cache, meta, scale)
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)  # [T, Hq, D]
    cpu_kernels.ragged_attention_cpu(q, k_cache, v_cache, plan.seq_table, plan.items, plan.first,
                                     scale, out)
    if len(plan.native) < len(meta.query_lens):  # prefill chunks of a mixed batch
        _loop_attention(q, k_cache, v_cache, meta, scale, out, skip=plan.native)
    return out


def sdpa_attention(
    q: torch.Tensor,  # [T, Hq, D]
    k_cache: torch.Tensor,  # [S, Hkv, L, D]
    v_cache: torch.Tensor,  # [S, Hkv, L, D]
    meta: AttentionMetadata,
    scale: float,
) -> torch.Tensor:  # [T, Hq, D]
    """`ragged_attention` through torch's SDPA only (any device and dtype)."""
    if q.shape[0] == 1 and meta.kv_ranges is None:  # batch-1 decode
        end = meta.start_positions[0] + 1
        return single_token_attention(q[0], k_cache, v_cache, meta.slot_ids[0], end, scale)[None]
    if meta.dense:
        return _dense_attention(q, k_cache, v_cache, meta, scale)
    if meta.window_index is not None:
        return _window_attention(q, k_cache, v_cache, meta, scale)
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    return _loop_attention(q, k_cache, v_cache, meta, scale, out)


def _loop_attention(
    q: torch.Tensor,  # [T, Hq, D]
    k_cache: torch.Tensor,  # [S, Hkv, L, D]
    v_cache: torch.Tensor,  # [S, Hkv, L, D]
    meta: AttentionMetadata,
    scale: float,
    out: torch.Tensor,  # [T, Hq, D], filled in place
    skip: frozenset[int] = frozenset(),  # sequences already computed
) -> torch.Tensor:  # out
    """One SDPA call per sequence on its own cache view (or gathered KV window)."""
    num_tokens, num_heads, head_dim = q.shape
    num_kv_heads = k_cache.shape[1]
    group = num_heads // num_kv_heads
    offset = 0
    for i, (slot, start, qlen) in enumerate(
        zip(meta.slot_ids, meta.start_positions, meta.query_lens, strict=True)
    ):
        if i in skip:
            offset += qlen
            continue
        end = start + qlen
        ranges = None if meta.kv_ranges is None else meta.kv_ranges[i]
        mask: torch.Tensor | None = None
        if ranges is None:
            k = k_cache[slot, :, :end]  # [Hkv, ctx, D] view
            v = v_cache[slot, :, :end]
            if qlen > 1:
                key_pos = torch.arange(end, device=q.device)
        else:
            key_pos = torch.cat([torch.arange(a, b, device=q.device) for a, b in ranges])
            k = k_cache[slot].index_select(1, key_pos)  # [Hkv, W, D] reads only the window
            v = v_cache[slot].index_select(1, key_pos)
        if qlen > 1 or ranges is not None:
            query_pos = torch.arange(start, end, device=q.device)
            mask = key_pos[None, :] <= query_pos[:, None]  # [q, ctx]
            mask = mask.repeat(group, 1)  # [G*q, ctx], row g*q + j is query j
        # Query heads sharing a KV head are stacked as extra rows: no K/V repeat.
        qh = (
            q[offset : offset + qlen]
            .view(qlen, num_kv_heads, group, head_dim)
            .permute(1, 2, 0, 3)
            .reshape(num_kv_heads, group * qlen, head_dim)
        )  # [Hkv, G*q, D]
        # A leading batch dim of 1 lets CPU SDPA pick its flash kernel (3-D inputs get the
        # math kernel: 10-35 % slower per layer, `benchmarks/cpu_probe.py attention`).
        o = F.scaled_dot_product_attention(
            qh[None], k[None], v[None], attn_mask=mask, scale=scale
        )[0]  # [Hkv, G*q, D]
        out[offset : offset + qlen] = (
            o.view(num_kv_heads, group, qlen, head_dim)
            .permute(2, 0, 1, 3)
            .reshape(qlen, num_heads, head_dim)
        )
        offset += qlen
    assert offset == num_tokens
    return out


def _dense_attention(
    q: torch.Tensor,  # [T, Hq, D], T = B * q
    k_cache: torch.Tensor,  # [S, Hkv, L, D]
    v_cache: torch.Tensor,  # [S, Hkv, L, D]
    meta: AttentionMetadata,
    scale: float,
) -> torch.Tensor:  # [T, Hq, D]
    """One SDPA call over a contiguous slot range, padded to the longest context (masked)."""
    _, num_heads, head_dim = q.shape
    num_kv_heads = k_cache.shape[1]
    group = num_heads // num_kv_heads
    b, qlen = len(meta.slot_ids), meta.query_lens[0]
    s0 = meta.slot_ids[0]
    max_end = max(s + n for s, n in zip(meta.start_positions, meta.query_lens, strict=True))
    k = k_cache[s0 : s0 + b, :, :max_end]  # [B, Hkv, L, D] view
    v = v_cache[s0 : s0 + b, :, :max_end]
    qh = (
        q.view(b, qlen, num_kv_heads, group, head_dim)
        .permute(0, 2, 3, 1, 4)
        .reshape(b, num_kv_heads, group * qlen, head_dim)
    )  # [B, Hkv, G*q, D], row g*q + j is query j
    mask = meta.dense_mask
    if mask is not None:
        mask = mask.repeat(1, 1, group, 1)  # [B, 1, G*q, L]
    o = F.scaled_dot_product_attention(qh, k, v, attn_mask=mask, scale=scale)  # [B, Hkv, G*q, D]
    return (
        o.view(b, num_kv_heads, group, qlen, head_dim)
        .permute(0, 3, 1, 2, 4)
        .reshape(b * qlen, num_heads, head_dim)
    )


def _window_attention(
    q: torch.Tensor,  # [B, Hq, D], one new token per sequence
    k_cache: torch.Tensor,  # [S, Hkv, L, D]
    v_cache: torch.Tensor,  # [S, Hkv, L, D]
    meta: AttentionMetadata,
    scale: float,
) -> torch.Tensor:  # [B, Hq, D]
    """One gather of every sequence's KV window and one SDPA (all keys precede the query)."""
    assert meta.window_index is not None
    b, num_heads, head_dim = q.shape
    num_kv_heads = k_cache.shape[1]
    slots = meta.token_slots[:, None]  # [B, 1]
    k = k_cache[slots, :, meta.window_index].transpose(1, 2)  # [B, Hkv, W, D]
    v = v_cache[slots, :, meta.window_index].transpose(1, 2)
    qh = q.view(b, num_kv_heads, num_heads // num_kv_heads, head_dim)  # [B, Hkv, G, D]
    o = F.scaled_dot_product_attention(qh, k, v, attn_mask=meta.window_mask, scale=scale)
    return o.reshape(b, num_heads, head_dim)


def single_token_attention(
    q: torch.Tensor,  # [Hq, D], the batch's only new token
    k_cache: torch.Tensor,  # [S, Hkv, L, D]
    v_cache: torch.Tensor,  # [S, Hkv, L, D]
    slot: int,
    end: int,  # context length including the new token
    scale: float,
) -> torch.Tensor:  # [Hq, D]
    """Attention of one decode token over `k_cache[slot, :, :end]` (no mask needed: every cached
    key precedes it). The G query heads of a KV head are consecutive, so q reshapes without a copy.
    (A flash-decoding split of the context was no faster: `benchmarks/cpu_probe.py attention`.)"""
    num_kv_heads, head_dim = k_cache.shape[1], k_cache.shape[3]
    qh = q.view(1, num_kv_heads, -1, head_dim)  # [1, Hkv, G, D]
    k, v = k_cache[slot, :, :end], v_cache[slot, :, :end]  # [Hkv, ctx, D] views
    o = F.scaled_dot_product_attention(qh, k[None], v[None], scale=scale)  # [1, Hkv, G, D]
    return o.view(q.shape)
