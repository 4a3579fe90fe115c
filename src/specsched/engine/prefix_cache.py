"""Automatic prefix caching by block hashes over slot-resident KV.

A prompt is cut into full blocks of `block_size` tokens; block i's hash chains the hash of
block i-1 with its tokens, so equal hashes mean equal prefixes. When a slot has computed a
prompt block, the block is registered as living in that slot. The KV stays valid after the
request finishes (the slot is free but untouched) until the slot is handed to a request that
overwrites those positions, which invalidates the slot's blocks from the first overwritten one.

A new request looks up its longest registered prefix: if the holding slot is free it takes that
slot (zero copy), otherwise it copies the prefix positions into its own slot. At least one prompt
token is always recomputed so the request gets logits to sample from.
"""

from __future__ import annotations

import hashlib
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
    slot: int  # where the cached prefix lives
    num_tokens: int  # cached prompt tokens (a multiple of block_size)


class PrefixCache:
    """Maps block hash -> slot; one ordered block list per slot."""

    def __init__(self, num_slots: int, block_size: int) -> None:
        self.block_size = block_size
        self._where: dict[bytes, int] = {}
        self._slot_blocks: list[list[bytes]] = [[] for _ in range(num_slots)]

    def lookup(self, hashes: list[bytes], num_prompt_tokens: int) -> PrefixHit | None:
        """Longest cached prefix, leaving >= 1 prompt token to compute."""
        max_blocks = (num_prompt_tokens - 1) // self.block_size
        best: PrefixHit | None = None
        for i, h in enumerate(hashes[:max_blocks]):
            slot = self._where.get(h)
            if slot is None:
                break
            best = PrefixHit(slot=slot, num_tokens=(i + 1) * self.block_size)
        return best

    def cached_blocks(self, slot: int) -> int:
        return len(self._slot_blocks[slot])

    def truncate(self, slot: int, num_tokens: int) -> None:
        """The slot's positions >= num_tokens will be overwritten: forget blocks past them."""
        keep = num_tokens // self.block_size
        for h in self._slot_blocks[slot][keep:]:
            if self._where.get(h) == slot:
                del self._where[h]
        del self._slot_blocks[slot][keep:]

    def register(self, slot: int, hashes: list[bytes], num_computed_tokens: int) -> None:
        """Record the slot's prompt blocks that are fully computed by now."""
        blocks = self._slot_blocks[slot]
        upto = min(len(hashes), num_computed_tokens // self.block_size)
        for h in hashes[len(blocks) : upto]:
            blocks.append(h)
            self._where[h] = slot
