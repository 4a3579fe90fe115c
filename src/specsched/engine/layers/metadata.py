"""Per-step attention metadata: built once from plain per-sequence lists, shared by all layers.

A batch is ragged: sequence i brings `query_lens[i]` new tokens (q >= 1: prefill chunks, decode,
speculative verify) at positions `start_positions[i] ..` (its num_computed_tokens) in slot
`slot_ids[i]`; the new tokens are flattened sequence-major to `[T, ...]`, T = sum(query_lens).
Which attention path a step takes (`specsched.engine.layers.attention`) is planned here: the
native kernel's sequence table, the dense fast path and its mask, the batched KV-window gather.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from specsched.engine.layers import cpu_kernels

KVRanges = tuple[tuple[int, int], ...]

DENSE_MAX_PADDING = 1.25  # dense path only if B x max_ctx <= this x Σctx


@dataclass(frozen=True, slots=True)
class KernelPlan:
    """What `cpu_kernels.ragged_attention_cpu` runs for one step (shared by all layers)."""

    seq_table: torch.Tensor  # [B', 4] int64 rows (slot, start, qlen, first token row)
    items: torch.Tensor  # [N, 3] int64 (row of seq_table, c0, c1): key ranges to read
    first: torch.Tensor  # [B' + 1] int64: row i owns items first[i] .. first[i + 1] - 1
    native: frozenset[int]  # indices (into the batch) of the sequences in seq_table


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
    # native kernel (`cpu_kernels`): [B, 4] int64 rows (slot, start, qlen, first token row)
    seq_table: torch.Tensor | None = None
    max_end: int = 0  # max over sequences of start + q (cache positions the step touches)
    _plans: dict[tuple[int, int, int], KernelPlan] = field(
        default_factory=dict, compare=False, repr=False
    )  # memo of `kernel_plan`

    @property
    def num_tokens(self) -> int:
        return sum(self.query_lens)

    def check_cache(self, k_cache: torch.Tensor) -> None:
        """ValueError unless every slot and position of this step lies within `k_cache`
        ([S, Hkv, L, D]): native kernels index it unchecked, so this runs before any write."""
        if self.max_end > k_cache.shape[2] or max(self.slot_ids) >= k_cache.shape[0]:
            raise ValueError(f"batch reaches position {self.max_end} / slot "
                             f"{max(self.slot_ids)} beyond the cache {tuple(k_cache.shape)}")

    def kernel_plan(self, max_q: int, num_kv_heads: int, num_threads: int) -> KernelPlan:
        """The native kernel's work for the sequences with q <= max_q (memoized per step)."""
        key = (max_q, num_kv_heads, num_threads)
        if key not in self._plans:
            assert self.seq_table is not None
            keep = [i for i, q in enumerate(self.query_lens) if q <= max_q]
            table = self.seq_table if len(keep) == len(self.query_lens) else (
                self.seq_table[keep].contiguous())
            ranges = [((0, self.start_positions[i] + self.query_lens[i]),)
                      if self.kv_ranges is None else self.kv_ranges[i] for i in keep]
            items, first = cpu_kernels.plan_items(ranges, num_kv_heads, num_threads)
            self._plans[key] = KernelPlan(table, items, first, frozenset(keep))
        return self._plans[key]


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
    table: list[list[int]] = []
    for slot, start, q in zip(slot_ids, start_positions, query_lens, strict=True):
        table.append([slot, start, q, len(slots)])
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
        seq_table=torch.tensor(table, dtype=torch.long),
        max_end=max(s + q for s, q in zip(start_positions, query_lens, strict=True)),
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
