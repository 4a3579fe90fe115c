"""A separate small draft model sharing the target's tokenizer (vLLM `method="draft_model"`).

The drafter owns a `LlamaModel` and its own `KVCache` with the engine's slot layout, and keeps
per slot how many leading tokens of the request have draft K/V (`num_cached`). A propose feeds,
in one ragged forward, every token the draft has not seen yet (the prompt on the first call, the
tokens produced during K = 0 steps, the last verified tokens) and samples d_1 from its last
position; then K_i - 1 one-token forwards give d_2 .. d_K. This lazy catch-up is what lets a
K = 0 step skip the drafter entirely (vLLM's DSD runs a draft forward at K = 0 instead).

After verify with a_i accepted drafts, the draft KV is valid for the old L_i tokens plus the
accepted drafts it has K/V for: num_cached = L_i + min(a_i, K_i - 1) (d_K was never fed).

Precision: the draft model may read int8 or bf16 weights (`SpeculativeConfig.draft_dtype`) with
fp32 activations and an fp32 KV cache of its own; only the proposals change, never the verified
output.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from specsched.engine.layers.attention import build_metadata
from specsched.engine.layers.kv_cache import KVCache
from specsched.engine.layers.model import LlamaModel
from specsched.engine.spec.drafters.base import (
    DraftBatch,
    Drafter,
    DraftProposal,
    draw_draft_tokens,
)


class DraftModelDrafter(Drafter):
    def __init__(self, model: LlamaModel, kv: KVCache) -> None:
        super().__init__()
        self.model = model
        self.kv = kv
        self.num_cached: list[int] = [0] * kv.num_slots  # draft KV length per slot
        self._pending: dict[int, tuple[int, int]] = {}  # slot -> (L_i, K_i) of the last propose

    @property
    def weight_dtype(self) -> torch.dtype:
        return self.model.weight_dtype

    @property
    def extra_weight_bytes(self) -> int:
        return self.model.weight_nbytes()

    def _propose(self, batch: DraftBatch, num_spec_tokens: list[int]) -> DraftProposal:
        device = self.kv.k[0].device
        rows = [i for i, k in enumerate(num_spec_tokens) if k > 0]
        drafts: list[list[int]] = [[] for _ in num_spec_tokens]
        probs: list[list[torch.Tensor]] = [[] for _ in num_spec_tokens]
        # 1) catch up on unseen tokens + first draft token, one ragged forward
        ids: list[int] = []
        starts: list[int] = []
        qlens: list[int] = []
        last_rows: list[int] = []
        for i in rows:
            tokens = batch.token_ids[i]
            slot = batch.slot_ids[i]
            start = self.num_cached[slot]
            chunk = [int(t) for t in tokens[start:]]  # >= 1: the last token is never cached
            ids.extend(chunk)
            starts.append(start)
            qlens.append(len(chunk))
            last_rows.append(len(ids) - 1)
            self._pending[slot] = (len(tokens), num_spec_tokens[i])
        slots = [batch.slot_ids[i] for i in rows]
        meta = build_metadata(slots, starts, qlens, device)
        logits = self.model(
            torch.tensor(ids, dtype=torch.long, device=device),
            meta,
            self.kv,
            torch.tensor(last_rows, dtype=torch.long, device=device),
        )  # [n, V]
        self._count_forward()
        positions = [s + q for s, q in zip(starts, qlens, strict=True)]  # next position per row
        active = rows
        for j in range(max(num_spec_tokens)):
            tokens_j, q = draw_draft_tokens(logits, batch, active)
            for r, i in enumerate(active):
                drafts[i].append(int(tokens_j[r]))
                if q is not None:
                    probs[i].append(q[r])
            nxt = [r for r, i in enumerate(active) if num_spec_tokens[i] > j + 1]
            if not nxt:
                break
            active = [active[r] for r in nxt]
            feed = [int(tokens_j[r]) for r in nxt]
            pos = [positions[rows.index(i)] + j for i in active]
            meta = build_metadata([batch.slot_ids[i] for i in active], pos, [1] * len(active),
                                  device)
            logits = self.model(torch.tensor(feed, dtype=torch.long, device=device), meta, self.kv)
            self._count_forward()
        for i in rows:
            slot = batch.slot_ids[i]
            self.num_cached[slot] = len(batch.token_ids[i]) + num_spec_tokens[i] - 1
        return DraftProposal.from_rows(drafts, None if batch.all_greedy else probs)

    def on_verified(self, batch: DraftBatch, num_accepted: Sequence[int]) -> None:
        for slot, a in zip(batch.slot_ids, num_accepted, strict=True):
            pending = self._pending.pop(slot, None)
            if pending is not None:
                length, k = pending
                self.num_cached[slot] = length + min(int(a), k - 1)

    def release(self, slot_id: int) -> None:
        self.num_cached[slot_id] = 0
        self._pending.pop(slot_id, None)
