"""Per-step speculation: route K with the schedule, build the drafter, propose drafts.

Every step (MagicDec-style dynamic K, arXiv:2408.11049; vLLM's DSD picks K per batch size):
  batch size = scheduled requests (prefill chunks included, as vLLM's `len(num_scheduled_tokens)`),
  pool = decoding requests, ctx = num_computed_tokens, representative = `ctx_agg` (mean default,
  see `SpeculativeConfig`); `specsched.router.route` gives one K for the step, or
  `route_per_request` one K per request (ragged verify). K is then capped per request so the
  verify positions fit max_model_len and no draft is wasted past max_tokens.
A step whose every K_i = 0 is a plain decode step: `Drafter.propose` returns before any forward.
"""

from __future__ import annotations

from collections.abc import Sequence as Seq
from dataclasses import dataclass

import torch

from specsched.engine.config import EngineConfig
from specsched.engine.drafters.base import DraftBatch, Drafter, DraftProposal
from specsched.engine.drafters.draft_model import DraftModelDrafter
from specsched.engine.drafters.ngram import NgramConfig, NgramDrafter
from specsched.engine.drafters.streaming import StreamingDrafter
from specsched.engine.kv_cache import KVCache
from specsched.engine.model import LlamaModel
from specsched.engine.scheduler import ScheduledSeq
from specsched.engine.sequence import Sequence
from specsched.engine.spec_config import DrafterKind, SpeculativeConfig
from specsched.engine.spec_stats import FIXED_CTX_BUCKETS, bucket_label
from specsched.errors import UserError
from specsched.router import route, route_per_request


@dataclass(frozen=True, slots=True)
class StepPlan:
    """K per scheduled entry (0 for prefill chunks) and the routed K of the step."""

    num_spec_tokens: tuple[int, ...]  # [len(scheduled)] after caps
    routed_k: int  # the router's K (batch mode) or the max over requests (per-request mode)


def build_drafter(
    cfg: SpeculativeConfig,
    engine_cfg: EngineConfig,
    target: LlamaModel,
    kv: KVCache,
    dtype: torch.dtype,
) -> Drafter | None:
    kind = cfg.drafter_kind
    if kind is DrafterKind.NONE:
        return None
    if kind is DrafterKind.STREAMING:
        return StreamingDrafter(target, kv, cfg.window, cfg.num_sink_tokens)
    if kind is DrafterKind.NGRAM:
        return NgramDrafter(
            NgramConfig(cfg.prompt_lookup_min, cfg.prompt_lookup_max, engine_cfg.max_model_len)
        )
    from specsched.engine.models import load_model

    loaded = load_model(cfg.draft_model)
    if loaded.config.vocab_size != target.cfg.vocab_size:
        raise UserError(
            f"draft model {cfg.draft_model!r} has vocab {loaded.config.vocab_size} but the "
            f"target has {target.cfg.vocab_size}; the draft must share the target's tokenizer"
        )
    device = kv.k[0].device
    model = LlamaModel(loaded.config, loaded.weights, engine_cfg.max_model_len, dtype, device)
    draft_kv = KVCache(loaded.config, kv.num_slots, engine_cfg.max_model_len, dtype, device)
    return DraftModelDrafter(model, draft_kv)


class Speculator:
    """Owns the drafter and the schedule; the engine asks it for K and drafts every step."""

    def __init__(self, cfg: SpeculativeConfig, engine_cfg: EngineConfig,
                 drafter: Drafter | None) -> None:
        self.cfg = cfg
        self.max_model_len = engine_cfg.max_model_len
        self.drafter = drafter
        self.enabled = cfg.enabled and drafter is not None
        sched = cfg.schedule
        self.ctx_ranges = FIXED_CTX_BUCKETS if sched.is_batch_only else sched.ctx_ranges

    def plan(self, scheduled: Seq[ScheduledSeq]) -> StepPlan:
        """K per scheduled entry for this step (all 0 when speculation is off)."""
        n = len(scheduled)
        if not self.enabled:
            return StepPlan((0,) * n, 0)
        computed = [s.seq.num_computed_tokens for s in scheduled]
        if self.cfg.per_request_k:
            ks = route_per_request(self.cfg.schedule, computed)
        else:
            prompt = [s.seq.num_prompt_tokens for s in scheduled]
            ks = [route(self.cfg.schedule, computed, prompt, self.cfg.ctx_agg).k] * n
        out: list[int] = []
        routed = 0
        for s, k in zip(scheduled, ks, strict=True):
            seq = s.seq
            if seq.is_prefilling:
                out.append(0)
                continue
            routed = max(routed, k)
            out.append(max(0, min(k, self._room(seq))))
        return StepPlan(tuple(out), routed)

    def _room(self, seq: Sequence) -> int:
        """Most drafts whose K + 1 outputs fit max_model_len and the request's max_tokens."""
        fit_len = self.max_model_len - len(seq.token_ids) - 1
        fit_tokens = seq.params.max_tokens - len(seq.output_token_ids) - 1
        return min(fit_len, fit_tokens)

    def draft_batch(self, seqs: Seq[Sequence]) -> DraftBatch:
        return DraftBatch(
            token_ids=[s.token_ids for s in seqs],
            slot_ids=[s.slot for s in seqs if s.slot is not None],
            num_computed_tokens=[s.num_computed_tokens for s in seqs],
            params=[s.params for s in seqs],
            generators=[s.generator for s in seqs],
        )

    def propose(self, batch: DraftBatch, ks: Seq[int]) -> DraftProposal:
        if self.drafter is None or not any(ks):
            return DraftProposal.empty(len(batch))
        return self.drafter.propose(batch, list(ks))

    def bucket(self, ctx: int) -> str:
        return bucket_label(self.ctx_ranges, ctx)
