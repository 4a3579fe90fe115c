"""Per-step speculation in the engine: ask the K policy, run the drafter, report outcomes.

Every step: the scheduled batch becomes a `specsched.policy.BatchState` (each request's
`num_computed_tokens`, `num_prompt_tokens` and draft room), the policy returns K per request
(`KDecision`, caps applied: 0 while prefilling, room for K + 1 outputs); the drafter proposes up to
K_i tokens for the decoding requests; after verification the drafter rolls its state forward
(`on_verified`) and the policy sees what was accepted (`observe`).
A step whose every K_i = 0 is a plain decode step: no draft batch is built, no drafter runs.
"""

from __future__ import annotations

from collections.abc import Sequence as Seq
from dataclasses import dataclass

import torch

from specsched.engine.config import EngineConfig
from specsched.engine.layers.kv_cache import KVCache
from specsched.engine.layers.linear import draft_weight_dtype
from specsched.engine.layers.model import LlamaModel
from specsched.engine.sched.scheduler import ScheduledSeq
from specsched.engine.sched.sequence import Sequence
from specsched.engine.spec.config import NO_SPECULATION, DrafterKind, SpeculativeConfig
from specsched.engine.spec.drafters.base import DraftBatch, Drafter, DraftProposal
from specsched.engine.spec.drafters.draft_model import DraftModelDrafter
from specsched.engine.spec.drafters.ngram import NgramConfig, NgramDrafter
from specsched.engine.spec.drafters.streaming import StreamingDrafter
from specsched.engine.stats import FIXED_CTX_BUCKETS
from specsched.errors import UserError
from specsched.policy import BatchState, KDecision, KPolicy, StepOutcome, draft_room


@dataclass(frozen=True, slots=True)
class Drafts:
    """One step's proposal: `decode[j]` is the scheduled entry of the proposal's request j."""

    decode: tuple[int, ...]
    batch: DraftBatch
    proposal: DraftProposal

    def per_entry(self, num_entries: int) -> list[list[int]]:
        """Draft token ids per scheduled entry (empty for prefill chunks and K = 0)."""
        out: list[list[int]] = [[] for _ in range(num_entries)]
        for i, d in zip(self.decode, self.proposal.to_lists(), strict=True):
            out[i] = d
        return out


def build_drafter(
    cfg: SpeculativeConfig,
    engine_cfg: EngineConfig,
    target: LlamaModel,
    kv: KVCache,
    dtype: torch.dtype,
) -> Drafter | None:
    """The drafter of `cfg`; `streaming` and `model` read weights in the dtype
    `draft_weight_dtype` resolves `cfg.draft_dtype` to (an int8 or bf16 copy of an fp32 target
    is built once and kept on the target)."""
    kind = cfg.drafter
    if kind is DrafterKind.NONE:
        return None
    device = kv.k[0].device
    if kind is DrafterKind.STREAMING:
        weights = draft_weight_dtype(cfg.draft_dtype, target.weight_dtype, device)
        draft = target.with_weight_dtype(weights)
        extra = 0 if draft is target else draft.weight_nbytes()
        return StreamingDrafter(draft, kv, cfg.window, cfg.num_sink_tokens, extra)
    if kind is DrafterKind.NGRAM:
        return NgramDrafter(NgramConfig(cfg.prompt_lookup_min, cfg.prompt_lookup_max))
    from specsched.engine.loading.registry import load_model

    assert cfg.draft_model is not None
    loaded = load_model(cfg.draft_model)
    if loaded.config.vocab_size != target.cfg.vocab_size:
        raise UserError(
            f"draft model {cfg.draft_model!r} has vocab {loaded.config.vocab_size} but the "
            f"target has {target.cfg.vocab_size}; the draft must share the target's tokenizer"
        )
    weights = draft_weight_dtype(cfg.draft_dtype, dtype, device)
    model = LlamaModel(loaded.config, loaded.weights, engine_cfg.max_model_len, dtype, device,
                       weight_dtype=weights)
    draft_kv = KVCache(loaded.config, kv.num_slots, engine_cfg.max_model_len, dtype, device)
    return DraftModelDrafter(model, draft_kv)


def resolved_draft_dtype(cfg: SpeculativeConfig, dtype: str, device: str) -> str:
    """The weight dtype `build_drafter` will give the drafter of `cfg` on an engine of `dtype`
    and `device` ("none" for drafters without a model), e.g. for labelling a profile."""
    if cfg.drafter in (DrafterKind.NONE, DrafterKind.NGRAM):
        return "none"
    weights = draft_weight_dtype(cfg.draft_dtype, getattr(torch, dtype), device)
    return str(weights).removeprefix("torch.")


class Speculator:
    """Owns the drafter and the K policy; the engine asks it for K and drafts every step."""

    def __init__(self, cfg: SpeculativeConfig | None, engine_cfg: EngineConfig,
                 drafter: Drafter | None, policy: KPolicy | None = None) -> None:
        self.cfg = cfg or NO_SPECULATION
        self.max_model_len = engine_cfg.max_model_len
        self.drafter = drafter
        # a policy carried over from an earlier run (what it learned stays), else a fresh one
        self.policy = policy if policy is not None else self.cfg.policy.build()
        self.enabled = self.cfg.enabled and drafter is not None

    @property
    def draft_dtype(self) -> str:
        """The weight dtype the drafter reads ("bfloat16", "float32", ...; "none": no model)."""
        dtype = None if self.drafter is None else self.drafter.weight_dtype
        return "none" if dtype is None else str(dtype).removeprefix("torch.")

    @property
    def draft_extra_bytes(self) -> int:
        """Memory the drafter's weights add beyond the target's (a low-precision copy, a
        separate draft model's weights)."""
        return 0 if self.drafter is None else self.drafter.extra_weight_bytes

    def decide(self, scheduled: Seq[ScheduledSeq]) -> KDecision:
        """K per scheduled entry for this step (all 0 when speculation is off)."""
        if not self.enabled:
            return KDecision((0,) * len(scheduled), 0)
        seqs = [s.seq for s in scheduled]
        return self.policy.decide(BatchState(
            num_computed_tokens=tuple(s.num_computed_tokens for s in seqs),
            num_prompt_tokens=tuple(s.num_prompt_tokens for s in seqs),
            room=tuple(self._room(s) for s in seqs),
            request_ids=tuple(s.request_id for s in seqs),
        ))

    def _room(self, seq: Sequence) -> int:
        return draft_room(self.max_model_len, len(seq.token_ids), seq.params.max_tokens,
                          len(seq.output_token_ids))

    def propose(self, scheduled: Seq[ScheduledSeq], decision: KDecision) -> Drafts | None:
        """Drafts for the decoding entries with K_i > 0; None when no entry drafts."""
        if self.drafter is None or not any(decision.num_spec_tokens):
            return None
        decode = tuple(i for i, s in enumerate(scheduled) if not s.seq.is_prefilling)
        seqs = [scheduled[i].seq for i in decode]
        batch = DraftBatch(
            token_ids=[s.token_ids for s in seqs],
            slot_ids=[s.slot for s in seqs if s.slot is not None],
            num_computed_tokens=[s.num_computed_tokens for s in seqs],
            params=[s.params for s in seqs],
            generators=[s.generator for s in seqs],
        )
        ks = [decision.num_spec_tokens[i] for i in decode]
        return Drafts(decode, batch, self.drafter.propose(batch, ks))

    def on_verified(self, drafts: Drafts | None, num_accepted: list[int]) -> None:
        """Roll the drafter's own state forward to the verified tokens."""
        if drafts is not None and self.drafter is not None:
            self.drafter.on_verified(drafts.batch, num_accepted)

    @property
    def ctx_buckets(self) -> tuple[tuple[int, int], ...]:
        """Context ranges acceptance is reported by: the schedule's, or fixed ones without."""
        sched = self.cfg.policy.schedule
        return FIXED_CTX_BUCKETS if sched.is_batch_only else sched.ctx_ranges

    def observe(self, outcome: StepOutcome) -> None:
        if self.enabled:
            self.policy.observe(outcome)

    def release(self, seq: Sequence) -> None:
        """Forget drafter state of a finished or aborted request."""
        if self.drafter is not None and seq.slot is not None:
            self.drafter.release(seq.slot)
