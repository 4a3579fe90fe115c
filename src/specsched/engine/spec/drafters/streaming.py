"""StreamingLLM self-speculation (MagicDec): the target model drafts on a window of its own KV.

MagicDec (Chen et al. 2024, arXiv:2408.11049) drafts with the target itself, attending only to a
StreamingLLM cache (Xiao et al. 2023, arXiv:2309.17453): the first `num_sink_tokens` positions
plus the last `window` positions. The draft's attention reads O(sinks + W) keys per token whatever
the context (`kv_ranges` gathers only those positions), so its cost stays flat while a verify
step's attention grows with context: the best K rises with context.

KV bookkeeping. Request i has true K/V at positions [0, c_i), c_i = num_computed_tokens; its last
sampled token sits at position c_i. Draft step j (0 <= j < K_i) feeds one token at position
c_i + j (the last token, then d_1, ...) and writes its window-approximate K/V there, so drafting
writes positions c_i .. c_i + K_i - 1. The verify forward then feeds [last, d_1 .. d_K] at
positions c_i .. c_i + K_i and, in every layer, writes the true K/V of all of them before its
attention reads any: every position the draft wrote is overwritten before it is read by the
target. Positions past the accepted ones are rolled back by num_computed_tokens as usual.
The drafter holds no state of its own, so it never needs to catch up after K = 0 steps.

Low-precision draft (`SpeculativeConfig.draft_dtype`: int8 by default where its native kernel
builds, else bf16 where the CPU runs it natively). The drafter runs
`LlamaModel.with_weight_dtype(int8 | bf16)`: the same model with int8 (per-row scales,
`layers/int8_linear.py`) or bf16 copies of its matmul weights and output layer, sharing the
target's embedding, norms, rotary table and - the point of self-speculation - the target's fp32
KV cache. Its activations, K/V and attention stay fp32 (each matmul accumulates in fp32). So
the draft's window attention reads the target's exact K/V for every position < c_i, and its own
approximate K/V only at the draft positions c_i .. c_i + K_i - 1 it wrote itself; the
bookkeeping above holds unchanged (verify overwrites every one of those positions before the
target reads it). A separate low-precision KV copy would have to be kept in step with every
verify and would save nothing that matters here: the window is W + sinks positions, the
weights are the whole model. Cost: the copy's bytes (`Speculator.draft_extra_bytes`: SmolLM2-135M
int8 135 MB + a bf16 copy for drafts of > 8 rows, 404 MB; bf16 alone 269 MB); per draft token
a quarter (int8) or half (bf16) of the weight traffic of an fp32 target step.
"""

from __future__ import annotations

import torch

from specsched.engine.layers.attention import KVRanges, build_metadata
from specsched.engine.layers.kv_cache import KVCache
from specsched.engine.layers.model import LlamaModel
from specsched.engine.spec.drafters.base import (
    DraftBatch,
    Drafter,
    DraftProposal,
    draw_draft_tokens,
)


def streaming_ranges(position: int, window: int, num_sink_tokens: int) -> KVRanges:
    """Positions a query at `position` reads: the sinks + the last `window` (incl. itself)."""
    end = position + 1
    if end <= num_sink_tokens + window:
        return ((0, end),)
    return ((0, num_sink_tokens), (end - window, end))


class StreamingDrafter(Drafter):
    """Self-speculation on the target model with a sink + recent-window KV view."""

    def __init__(
        self,
        model: LlamaModel,  # the target, or its low-precision copy (`with_weight_dtype`)
        kv: KVCache,  # the target's cache
        window: int,
        num_sink_tokens: int,
        extra_weight_bytes: int = 0,  # memory of the low-precision copy (0: the target itself)
    ) -> None:
        super().__init__()
        self.model = model
        self.kv = kv
        self.window = window
        self.num_sink_tokens = num_sink_tokens
        self._extra_bytes = extra_weight_bytes

    @property
    def weight_dtype(self) -> torch.dtype:
        return self.model.weight_dtype

    @property
    def extra_weight_bytes(self) -> int:
        return self._extra_bytes

    def _propose(self, batch: DraftBatch, num_spec_tokens: list[int]) -> DraftProposal:
        device = self.kv.k[0].device
        drafts: list[list[int]] = [[] for _ in num_spec_tokens]
        probs: list[list[torch.Tensor]] = [[] for _ in num_spec_tokens]
        last = [int(t[-1]) for t in batch.token_ids]  # token fed next, per request
        for j in range(max(num_spec_tokens)):
            rows = [i for i, k in enumerate(num_spec_tokens) if k > j]
            starts = [int(batch.num_computed_tokens[i]) + j for i in rows]
            meta = build_metadata(
                [batch.slot_ids[i] for i in rows],
                starts,
                [1] * len(rows),
                device,
                kv_ranges=tuple(
                    streaming_ranges(p, self.window, self.num_sink_tokens) for p in starts
                ),
            )
            ids = torch.tensor([last[i] for i in rows], dtype=torch.long, device=device)  # [n]
            logits = self.model(ids, meta, self.kv)  # [n, V]
            self._count_forward()
            tokens, q = draw_draft_tokens(logits, batch, rows)
            for r, i in enumerate(rows):
                tok = int(tokens[r])
                drafts[i].append(tok)
                last[i] = tok
                if q is not None:
                    probs[i].append(q[r])
        return DraftProposal.from_rows(drafts, None if batch.all_greedy else probs)
