"""Ragged attention over a per-slot KV cache: a pure function of explicit metadata.

Layout. Each layer's cache is `k_cache, v_cache: [num_slots, Hkv, max_model_len, D]`. A batch is
ragged: sequence i brings `query_lens[i]` new tokens (q >= 1, may differ per sequence: prefill
chunks, decode, speculative verify) at positions `start_positions[i] ..` (its
num_computed_tokens) in slot `slot_ids[i]`. The new tokens are flattened to `[T, ...]` with
T = sum(query_lens), sequence-major.

Cost. Attention work and memory traffic scale with **Σ_i q_i x ctx_i (Σctx for decode)**, not
with B x max ctx. A batch of one token (batch-1 decode) takes `single_token_attention`: one SDPA
call per layer on the slot's cache view, no mask, no copies. Otherwise two paths, chosen once per
step in `build_metadata`:
- ragged (general): loop over sequences, reading only `k_cache[slot_i, :, :ctx_i]` (a view, no
  copy); one SDPA call per sequence per layer (Python overhead ~B x num_layers calls per step).
- dense (fast path): when all sequences have the same q, occupy a contiguous range of slots, and
  padding to the longest context costs at most DENSE_MAX_PADDING over Σctx, one SDPA call per
  layer over the view `k_cache[s0:s0+B, :, :max_ctx]` with a causal+length mask. Its cost is
  B x max ctx <= 1.25 x Σctx, so the Σctx statement holds within that factor.

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

from dataclasses import dataclass

import torch
import torch.nn.functional as F

KVRanges = tuple[tuple[int, int], ...]

DENSE_MAX_PADDING = 1.25  # dense path only if B x max_ctx <= this x Σctx


@dataclass(frozen=True, slots=True)
class AttentionMetadata:
    """Everything attention needs about one ragged batch; built once per step, shared by layers."""

    slot_ids: tuple[int, ...]
    start_positions: tuple[int, ...]  # num_computed_tokens of each sequence before this step
    query_lens: tuple[int, ...]  # new tokens per sequence (q_i >= 1)
    token_slots: torch.Tensor  # [T] int64, slot of every new token
    token_positions: torch.Tensor  # [T] int64, absolute position of every new token
    kv_ranges: tuple[KVRanges, ...] | None = None  # None: attend to [0, start + q)
    # dense fast path: [B, 1, G*q, max_ctx] bool mask (None = no mask needed); see module doc
    dense: bool = False
    dense_mask: torch.Tensor | None = None
    # batched KV-window path (all q = 1 with kv_ranges): positions [B, W] and validity mask
    window_index: torch.Tensor | None = None
    window_mask: torch.Tensor | None = None  # [B, 1, 1, W] bool, None if all windows are full

    @property
    def num_tokens(self) -> int:
        return sum(self.query_lens)


def build_metadata(
    slot_ids: list[int] | tuple[int, ...],
    start_positions: list[int] | tuple[int, ...],
    query_lens: list[int] | tuple[int, ...],
    device: torch.device | str = "cpu",
    kv_ranges: tuple[KVRanges, ...] | None = None,
) -> AttentionMetadata:
    """Build the per-step metadata from plain per-sequence lists (slots must be distinct)."""
    if not (len(slot_ids) == len(start_positions) == len(query_lens)):
        raise ValueError("slot_ids, start_positions and query_lens must have the same length")
    if len(set(slot_ids)) != len(slot_ids):
        raise ValueError(f"slot ids must be distinct within a batch, got {list(slot_ids)}")
    if any(q < 1 for q in query_lens):
        raise ValueError(f"every query_len must be >= 1, got {list(query_lens)}")
    if kv_ranges is not None and len(kv_ranges) != len(slot_ids):
        raise ValueError("kv_ranges needs one entry per sequence")
    dense, dense_mask = _dense_plan(slot_ids, start_positions, query_lens, kv_ranges, device)
    window_index, window_mask = None, None
    if kv_ranges is not None and all(q == 1 for q in query_lens):
        window_index, window_mask = _window_plan(kv_ranges, device)
    slots: list[int] = []
    positions: list[int] = []
    for slot, start, q in zip(slot_ids, start_positions, query_lens, strict=True):
        slots.extend([slot] * q)
        positions.extend(range(start, start + q))
    return AttentionMetadata(
        slot_ids=tuple(slot_ids),
        start_positions=tuple(start_positions),
        query_lens=tuple(query_lens),
        token_slots=torch.tensor(slots, dtype=torch.long, device=device),
        token_positions=torch.tensor(positions, dtype=torch.long, device=device),
        kv_ranges=kv_ranges,
        dense=dense,
        dense_mask=dense_mask,
        window_index=window_index,
        window_mask=window_mask,
    )


def _window_plan(
    kv_ranges: tuple[KVRanges, ...], device: torch.device | str
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Padded window positions [B, W] and their validity mask [B, 1, 1, W] (None: no padding)."""
    rows = [[p for a, b in ranges for p in range(a, b)] for ranges in kv_ranges]
    width = max(len(r) for r in rows)
    index = torch.tensor([r + [0] * (width - len(r)) for r in rows], dtype=torch.long,
                         device=device)  # [B, W]
    if all(len(r) == width for r in rows):
        return index, None
    lens = torch.tensor([len(r) for r in rows], device=device)
    valid = torch.arange(width, device=device)[None, :] < lens[:, None]  # [B, W]
    return index, valid[:, None, None, :]


def _dense_plan(
    slot_ids: list[int] | tuple[int, ...],
    start_positions: list[int] | tuple[int, ...],
    query_lens: list[int] | tuple[int, ...],
    kv_ranges: tuple[KVRanges, ...] | None,
    device: torch.device | str,
) -> tuple[bool, torch.Tensor | None]:
    """Whether the dense path applies, and its [B, 1, q, max_ctx] mask (None if all-visible)."""
    b = len(slot_ids)
    qlen = query_lens[0]
    ends = [s + q for s, q in zip(start_positions, query_lens, strict=True)]
    contiguous = list(slot_ids) == list(range(slot_ids[0], slot_ids[0] + b))
    if (
        b < 2
        or kv_ranges is not None
        or not contiguous
        or any(q != qlen for q in query_lens)
        or b * max(ends) > DENSE_MAX_PADDING * sum(ends)
    ):
        return False, None
    if qlen == 1 and min(ends) == max(ends):
        return True, None
    key_pos = torch.arange(max(ends), device=device)  # [L]
    query_pos = torch.tensor(start_positions, device=device)[:, None] + torch.arange(
        qlen, device=device
    )  # [B, q]
    mask = key_pos[None, None, :] <= query_pos[:, :, None]  # [B, q, L]
    return True, mask[:, None]  # [B, 1, q, L]


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
    num_tokens, num_heads, head_dim = q.shape
    num_kv_heads = k_cache.shape[1]
    group = num_heads // num_kv_heads
    if num_tokens == 1 and meta.kv_ranges is None:  # batch-1 decode
        end = meta.start_positions[0] + 1
        return single_token_attention(q[0], k_cache, v_cache, meta.slot_ids[0], end, scale)[None]
    if meta.dense:
        return _dense_attention(q, k_cache, v_cache, meta, scale)
    if meta.window_index is not None:
        return _window_attention(q, k_cache, v_cache, meta, scale)
    out = torch.empty_like(q)
    offset = 0
    for i, (slot, start, qlen) in enumerate(
        zip(meta.slot_ids, meta.start_positions, meta.query_lens, strict=True)
    ):
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
