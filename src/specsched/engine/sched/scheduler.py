"""Continuous batching: slots, admission with prefix-cache hits, chunked prefill, decode.

`schedule()` decides, for this step, which sequences run and how many new tokens (q) each brings,
within a token budget. Decoding sequences go first (q = 1), then sequences still prefilling, then
waiting requests are admitted while slots are free. The engine then routes K for the step
(`specsched.engine.spec.speculator`, which needs the whole scheduled batch, as vLLM decides K at
the end of `schedule()`) and extends each decode entry by its n_i <= K_i draft tokens. Draft tokens
are not charged to the token budget: the budget bounds prefill chunks, and a step feeds at most
max_num_seqs x max K more tokens.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from specsched.engine.config import EngineConfig
from specsched.engine.sched.prefix_cache import PrefixCache
from specsched.engine.sched.sequence import Sequence


@dataclass(frozen=True, slots=True)
class ScheduledSeq:
    seq: Sequence
    num_new_tokens: int  # q: tokens fed this step, from seq.num_computed_tokens on
    spec_token_ids: tuple[int, ...] = ()  # draft tokens among them, last (decode only)

    @property
    def num_spec_tokens(self) -> int:  # 0 = plain decode
        return len(self.spec_token_ids)

    @property
    def samples(self) -> bool:
        """Whether the entry yields tokens this step (decode, or the last prompt chunk)."""
        seq = self.seq
        return not seq.is_prefilling or (
            seq.num_computed_tokens + self.num_new_tokens >= len(seq.token_ids))

    def input_ids(self) -> list[int]:
        """The tokens fed this step: uncomputed tokens of the sequence, then the drafts."""
        start = self.seq.num_computed_tokens
        own = self.num_new_tokens - len(self.spec_token_ids)
        return [*self.seq.token_ids[start : start + own], *self.spec_token_ids]


@dataclass(frozen=True, slots=True)
class KVCopy:
    src_slot: int
    dst_slot: int
    num_tokens: int


@dataclass(frozen=True, slots=True)
class SchedulerOutput:
    scheduled: tuple[ScheduledSeq, ...]
    kv_copies: tuple[KVCopy, ...]  # run these before the forward

    @property
    def num_tokens(self) -> int:
        return sum(s.num_new_tokens for s in self.scheduled)

    def with_drafts(self, drafts: list[list[int]]) -> SchedulerOutput:
        """Each entry extended by its draft tokens (the verify query: last token + drafts)."""
        return SchedulerOutput(
            tuple(ScheduledSeq(s.seq, s.num_new_tokens + len(d), tuple(d))
                  for s, d in zip(self.scheduled, drafts, strict=True)),
            self.kv_copies,
        )


class Scheduler:
    def __init__(self, cfg: EngineConfig, prefix_cache: PrefixCache | None) -> None:
        self.cfg = cfg
        self.prefix_cache = prefix_cache
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.free_slots: list[int] = list(range(cfg.max_num_seqs))
        self._admissions = 0
        self._last_admitted = [0] * cfg.max_num_seqs  # admission counter per slot (LRU)

    def add(self, seq: Sequence) -> None:
        self.waiting.append(seq)

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    def schedule(self) -> SchedulerOutput:
        budget = self.cfg.max_num_batched_tokens
        scheduled: list[ScheduledSeq] = []
        copies: list[KVCopy] = []
        for seq in self.running:  # decode first: latency of running requests
            if seq.is_prefilling:
                continue
            scheduled.append(ScheduledSeq(seq, 1))
            budget -= 1
        for seq in self.running:  # then continue chunked prefills
            if seq.is_prefilling and budget > 0:
                q = min(seq.num_prompt_tokens - seq.num_computed_tokens, budget)
                scheduled.append(ScheduledSeq(seq, q))
                budget -= q
        while self.waiting and self.free_slots and budget > 0:
            seq = self.waiting.popleft()
            copy = self._admit(seq)
            if copy is not None:
                copies.append(copy)
            self.running.append(seq)
            q = min(seq.num_prompt_tokens - seq.num_computed_tokens, budget)
            scheduled.append(ScheduledSeq(seq, q))
            budget -= q
        return SchedulerOutput(tuple(scheduled), tuple(copies))

    def _admit(self, seq: Sequence) -> KVCopy | None:
        """Give the sequence a slot, reusing a cached prompt prefix when there is one.

        The free slot chosen loses no cached block held nowhere else, if one does (a slot
        already holding the prefix first: zero copy); otherwise it is the least recently
        admitted slot (LRU: a benchmark's freshly warmed prompts are not evicted for a stale
        longer cache), then the one losing the fewest blocks, then the lowest id.
        A slot holding the prefix keeps it; any other slot gets the prefix copied in."""
        pc = self.prefix_cache
        hit = None if pc is None else pc.lookup(seq.block_hashes, seq.num_prompt_tokens)
        holders = frozenset() if hit is None else hit.slots
        cached = 0 if hit is None else hit.num_tokens

        def cost(s: int) -> tuple[bool, int, int, int, int]:
            lost = 0 if pc is None else pc.lost_blocks(s, cached if s in holders else 0,
                                                        seq.block_hashes)
            # a slot that loses nothing first (a holder first: zero copy); else the least
            # recently admitted slot (LRU), so a run's own warm prompts survive older caches
            stale = self._last_admitted[s] if lost else 0
            return lost > 0, stale, int(s not in holders), lost, s

        slot = min(self.free_slots, key=cost)
        copy: KVCopy | None = None
        if hit is not None and slot not in holders:
            copy = KVCopy(min(holders), slot, cached)
        self.free_slots.remove(slot)
        self._admissions += 1
        self._last_admitted[slot] = self._admissions
        seq.slot = slot
        seq.num_computed_tokens = cached
        seq.stats.num_cached_tokens = cached
        if pc is not None:
            pc.truncate(slot, cached if copy is None else 0)
            pc.register(slot, seq.block_hashes, cached)
        return copy

    def abort(self, seq: Sequence) -> bool:
        """Drop an unfinished request: from the queue, or free its slot. True if it ran."""
        if seq in self.waiting:
            self.waiting.remove(seq)
            return False
        self.free(seq)
        return True

    def free(self, seq: Sequence) -> None:
        """A finished sequence releases its slot; its registered prefix blocks stay cached."""
        self.running.remove(seq)
        assert seq.slot is not None
        self.free_slots.append(seq.slot)
