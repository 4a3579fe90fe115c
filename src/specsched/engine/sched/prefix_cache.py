"""Automatic prefix caching by block hashes over slot-resident KV.

A prompt is cut into full blocks of `block_size` tokens; block i's hash chains the hash of
block i-1 with its tokens, so equal hashes mean equal prefixes. When a slot has computed a
prompt block, the block is registered as living in that slot; the same block may live in
several slots (two requests that shared a prefix, or a prefix copied to a new slot). The KV
stays valid after the request finishes (the slot is free but untouched) until the slot is handed
to a request that overwrites those positions, which invalidates the slot's blocks from the first
overwritten one.

A new request looks up its longest registered prefix (`PrefixHit.slots`: every slot holding it).
The scheduler then picks a free slot whose reuse destroys no cached block held nowhere else
(`lost_blocks`): a free slot holding the prefix is taken in place (zero copy) unless that would
destroy a longer cached tail that another free slot would not; otherwise the prefix positions are
copied into the chosen slot. When every free slot would lose blocks, the least recently admitted
one is reused (LRU). At least one prompt token is always recomputed so the request gets logits to
sample from. """

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def block_hashes(token_ids: list[int], block_size: int) -> list[bytes]:
    """Chained hashes of each full block of `token_ids`."""
    hashes: list[bytes] = []
    parent = b""
    for i in range(len(token_ids) // block_size):
        block = np.asarray(token_ids[i * block_size : (i + 1) * block_size], dtype=np.int64)
        parent = hashlib.blake2b(parent + block.tobytes(), digest_size=16).digest()
        hashes.append(parent)
    return hashes


@dataclass(frozen=True, slots=True)
class PrefixHit:
    slots: frozenset[int]  # every slot holding the cached prefix
    num_tokens: int  # cached prompt tokens (a multiple of block_size)


class PrefixCache:
    """Maps block hash -> the slots holding it; one ordered block list per slot."""

    def __init__(self, num_slots: int, block_size: int) -> None:
        self.block_size = block_size
        self._where: dict[bytes, set[int]] = {}
        self._slot_blocks: list[list[bytes]] = [[] for _ in range(num_slots)]

    def lookup(self, hashes: list[bytes], num_prompt_tokens: int) -> PrefixHit | None:
        """Longest cached prefix, leaving >= 1 prompt token to compute.

        A slot registers its blocks in order, so a slot holding block i holds blocks 0..i."""
        max_blocks = (num_prompt_tokens - 1) // self.block_size
        depth, holders = 0, set()
        for h in hashes[:max_blocks]:
            slots = self._where.get(h)
            if not slots:
                break
            depth, holders = depth + 1, slots
        if depth == 0:
            return None
        return PrefixHit(slots=frozenset(holders), num_tokens=depth * self.block_size)

    def lost_blocks(self, slot: int, keep_tokens: int = 0, hashes: Sequence[bytes] = ()) -> int:
        """Blocks that overwriting `slot` from position `keep_tokens` on would make uncached
        (those held by no other slot). A block equal to the incoming prompt's own block at the
        same place (`hashes`) is not lost: the request recomputes it and registers it again —
        the last full block of a prompt whose length is a multiple of the block size, which a
        lookup leaves out so that one token is computed (counting it as lost sent every such
        prompt to the least recently admitted slot, evicting another cached prompt)."""
        keep = keep_tokens // self.block_size
        blocks = self._slot_blocks[slot]
        return sum(1 for i in range(keep, len(blocks))
                   if self._where.get(blocks[i]) == {slot}
                   and not (i < len(hashes) and hashes[i] == blocks[i]))

    def truncate(self, slot: int, num_tokens: int) -> None:
        """The slot's positions >= num_tokens will be overwritten: forget blocks past them."""
        keep = num_tokens // self.block_size
        for h in self._slot_blocks[slot][keep:]:
            holders = self._where.get(h)
            if holders is not None:
                holders.discard(slot)
                if not holders:
                    del self._where[h]
        del self._slot_blocks[slot][keep:]

    def register(self, slot: int, hashes: list[bytes], num_computed_tokens: int) -> None:
        """Record the slot's prompt blocks that are fully computed by now."""
        blocks = self._slot_blocks[slot]
        upto = min(len(hashes), num_computed_tokens // self.block_size)
        for h in hashes[len(blocks) : upto]:
            blocks.append(h)
            self._where.setdefault(h, set()).add(slot)
