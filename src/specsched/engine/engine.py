"""LLMEngine: one `step()` = schedule -> decide K -> draft -> forward -> verify -> postprocess.

One code path for every step. The speculator asks the K policy (`specsched.policy`) for K per
request, capped to what fits; decoding request i feeds [last token, d_1 .. d_{n_i}] (n_i <= K_i
drafts, n_i = 0 is plain decoding) and gets n_i + 1 logits rows; prefill chunks feed prompt tokens
and get a row only when the prompt completes. Verification (`specsched.engine.spec.verify`) turns
the rows into accepted drafts plus one recovered or bonus token — with no drafts that is exactly
plain sampling — and rollback is num_computed_tokens = old + accepted + 1 (Leviathan et al. 2023,
arXiv:2211.17192).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from specsched.engine.config import EngineConfig, ModelConfig
from specsched.engine.layers import cpu_kernels
from specsched.engine.layers.attention import build_metadata
from specsched.engine.layers.compiled import check_compile_support
from specsched.engine.layers.kv_cache import KVCache
from specsched.engine.layers.model import LlamaModel
from specsched.engine.memory import available_memory, check_engine_fits
from specsched.engine.recorder import Phase, StepClock, record_step, step_outcome
from specsched.engine.sampling.params import SamplingParams
from specsched.engine.sampling.sampler import make_generator, processed_probs
from specsched.engine.sched.prefix_cache import PrefixCache, block_hashes
from specsched.engine.sched.scheduler import Scheduler, SchedulerOutput
from specsched.engine.sched.sequence import FinishReason, Sequence, check_prompt_ids
from specsched.engine.spec.config import NO_SPECULATION, SpeculativeConfig
from specsched.engine.spec.drafters.base import Drafter
from specsched.engine.spec.speculator import Drafts, Speculator, build_drafter
from specsched.engine.spec.verify import VerifyResult, verify_greedy, verify_sampling
from specsched.engine.stats import RunStats, StepStats
from specsched.errors import UserError
from specsched.policy import AdaptivePolicy, KPolicy, freeze_schedule
from specsched.schedule import Schedule

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


@contextmanager
def cpu_threads(n: int | None) -> Iterator[None]:
    """torch's intra-op CPU threads set to `n` (None: unchanged) inside the block, restored
    after it (the engine sets them once at load: `EngineConfig.num_threads`)."""
    saved = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


class LLMEngine:
    def __init__(
        self,
        model_cfg: ModelConfig,
        weights: dict[str, torch.Tensor],
        cfg: EngineConfig,
        speculative: SpeculativeConfig | None = None,
    ) -> None:
        if cfg.device.startswith("cuda") and not torch.cuda.is_available():
            raise UserError(f"device {cfg.device!r} requested but CUDA is not available")
        if cfg.compile:
            check_compile_support(cfg.device)
        if cfg.num_threads is not None and cfg.device == "cpu":
            torch.set_num_threads(cfg.num_threads)
        check_engine_fits(model_cfg, cfg, available_memory(cfg.device))  # before any allocation
        self.model_cfg = model_cfg
        self.cfg = cfg
        self.device = torch.device(cfg.device)
        dtype = DTYPES[cfg.dtype]
        self.model = LlamaModel(
            model_cfg, weights, cfg.max_model_len, dtype, self.device, compile=cfg.compile
        )
        self.kv = KVCache(model_cfg, cfg.max_num_seqs, cfg.max_model_len, dtype, self.device)
        self.prefix_cache = (
            PrefixCache(cfg.max_num_seqs, cfg.block_size) if cfg.enable_prefix_caching else None
        )
        self.scheduler = Scheduler(cfg, self.prefix_cache)
        self.speculator = self._speculator(speculative)
        self.stats = RunStats()
        self.last_step: StepStats | None = None  # the latest step(); None if it ran nothing
        self._next_id = 0

    @property
    def drafter(self) -> Drafter | None:
        return self.speculator.drafter

    def set_speculative(self, speculative: SpeculativeConfig | None,
                        policy: KPolicy | None = None) -> None:
        """Swap the speculative config between runs (no request may be in flight); reuses the
        weights, KV cache and prefix cache (benchmarks compare arms on one engine). `policy`:
        a K policy built earlier from this config's `policy` that keeps what it learned (a warm
        server); None: a fresh one."""
        if self.has_unfinished():
            raise UserError("cannot change the speculative config while requests are running")
        self.speculator = self._speculator(speculative, policy)

    def _speculator(self, speculative: SpeculativeConfig | None,
                    policy: KPolicy | None = None) -> Speculator:
        spec = speculative or NO_SPECULATION
        drafter = build_drafter(spec, self.cfg, self.model, self.kv, DTYPES[self.cfg.dtype])
        return Speculator(spec, self.cfg, drafter, policy)

    def attention_q_tile(self) -> int | None:
        """Query tokens per sequence that the target's attention packs into one vector of lanes
        (`cpu_kernels.query_tile`; None: attention takes SDPA, no such steps in its cost)."""
        m = self.model_cfg
        q = torch.empty((1, m.num_heads, m.head_dim), dtype=self.kv.k[0].dtype,
                        device=self.device)
        return cpu_kernels.query_tile(m.num_heads, m.num_kv_heads, q, self.kv.k[0])

    def learned_schedule(self) -> Schedule | None:
        """What an adaptive K policy learned so far, frozen into a 5-item schedule (None for a
        static policy)."""
        policy = self.speculator.policy
        return freeze_schedule(policy) if isinstance(policy, AdaptivePolicy) else None

    def reset_stats(self) -> RunStats:
        """Start a new aggregate; return the previous one."""
        old, self.stats = self.stats, RunStats()
        return old

    def check_prompt(self, prompt_token_ids: list[int]) -> None:
        """UserError if the prompt cannot run on this engine (empty, too long, bad ids)."""
        check_prompt_ids(prompt_token_ids, self.cfg.max_model_len, self.model_cfg.vocab_size)

    def add_request(
        self, prompt_token_ids: list[int], params: SamplingParams, prompt: str | None = None
    ) -> Sequence:
        self.check_prompt(prompt_token_ids)
        hashes = block_hashes(prompt_token_ids, self.cfg.block_size) if self.prefix_cache else []
        seq = Sequence(
            self._next_id,
            prompt_token_ids,
            params,
            make_generator(params, self.device),
            hashes,
            prompt,
        )
        self._next_id += 1
        self.scheduler.add(seq)
        return seq

    def has_unfinished(self) -> bool:
        return self.scheduler.has_unfinished()

    def step(self) -> list[Sequence]:
        """Run one engine step; return the sequences that finished in it."""
        clock = StepClock()
        self.last_step = None
        out = self.scheduler.schedule()
        if not out.scheduled:
            return []
        decision = self.speculator.decide(out.scheduled)
        drafts = None
        if any(decision.num_spec_tokens):  # K = 0 steps never build a draft batch
            with clock.phase(Phase.DRAFT):
                drafts = self.speculator.propose(out.scheduled, decision)
        if drafts is not None:
            out = out.with_drafts(drafts.per_entry(len(out.scheduled)))
        with clock.phase(Phase.VERIFY):
            result = self.verify(out, self.run(out), drafts)
        outcome = step_outcome(out, result, decision)  # before postprocess moves the counters
        self.speculator.on_verified(drafts, [r.num_accepted_tokens for r in outcome.requests])
        finished = self.postprocess(out, result)
        self.last_step = record_step(self.stats, out, decision, outcome, clock,
                                     self.speculator.ctx_buckets)
        self.speculator.observe(dataclasses.replace(outcome, step_time_s=self.last_step.wall_s))
        return finished

    def abort(self, seq: Sequence) -> bool:
        """Stop an unfinished request now: it leaves the queue or frees its slot (its prompt
        blocks stay in the prefix cache), its drafter state is released, and its
        finish_reason becomes ABORT. False if it had already finished."""
        if seq.finished:
            return False
        if self.scheduler.abort(seq):
            self.speculator.release(seq)
        seq.finish_reason = FinishReason.ABORT
        return True

    def run(self, out: SchedulerOutput) -> torch.Tensor:
        """One ragged forward; logits rows [sum over sampling entries of (n_i + 1), V]."""
        for c in out.kv_copies:
            self.kv.copy_prefix(c.src_slot, c.dst_slot, c.num_tokens)
        input_ids: list[int] = []
        logits_rows: list[int] = []
        for s in out.scheduled:
            input_ids.extend(s.input_ids())
            if s.samples:  # the last token and every draft get a row
                n = len(input_ids)
                logits_rows.extend(range(n - 1 - s.num_spec_tokens, n))
        meta = build_metadata(
            [s.seq.slot for s in out.scheduled if s.seq.slot is not None],
            [s.seq.num_computed_tokens for s in out.scheduled],
            [s.num_new_tokens for s in out.scheduled],
            self.device,
        )
        ids = torch.tensor(input_ids, dtype=torch.long, device=self.device)  # [T]
        rows = torch.tensor(logits_rows, dtype=torch.long, device=self.device)  # [N]
        return self.model(ids, meta, self.kv, rows)

    def verify(
        self,
        out: SchedulerOutput,
        logits: torch.Tensor,  # [sum (n_i + 1), V]
        drafts: Drafts | None,
    ) -> VerifyResult:
        """Accepted drafts + recovered/bonus token for every sampling entry (n_i = 0: sample)."""
        sampling = [s for s in out.scheduled if s.samples]
        seqs = [s.seq for s in sampling]
        ks = [s.num_spec_tokens for s in sampling]
        flat = torch.tensor([t for s in sampling for t in s.spec_token_ids], dtype=torch.long,
                            device=self.device)
        if all(seq.params.greedy for seq in seqs):
            return verify_greedy(flat, ks, logits)
        probs = processed_probs(logits, [seq.params for seq in seqs], [k + 1 for k in ks])
        q = None if drafts is None else drafts.proposal.draft_probs
        return verify_sampling(flat, ks, q, probs, [seq.generator for seq in seqs])

    def postprocess(self, out: SchedulerOutput, result: VerifyResult) -> list[Sequence]:
        """Advance every entry: computed tokens (rolling back rejected drafts), output tokens,
        stop conditions, prefix-cache registration."""
        now = time.perf_counter()
        finished: list[Sequence] = []
        outputs = result.to_lists()
        accepted = result.num_accepted.tolist()
        row = 0
        for s in out.scheduled:
            seq = s.seq
            was_prefilling = seq.is_prefilling
            if not s.samples:
                seq.num_computed_tokens += s.num_new_tokens  # mid-prompt chunk
            else:
                tokens, a = outputs[row], accepted[row]
                row += 1
                if was_prefilling:
                    seq.num_computed_tokens += s.num_new_tokens
                else:  # rollback of rejected positions: keep last token + accepted drafts
                    seq.num_computed_tokens += a + 1
                self._append(seq, tokens, now, finished)
            if self.prefix_cache is not None and was_prefilling:
                assert seq.slot is not None
                self.prefix_cache.register(seq.slot, seq.block_hashes, seq.num_computed_tokens)
        return finished

    def _append(
        self, seq: Sequence, tokens: list[int], now: float, finished: list[Sequence]
    ) -> None:
        """Append output tokens in order; stop at EOS / stop ids / max_tokens / max_model_len."""
        st = seq.stats
        for token in tokens:
            seq.token_ids.append(token)
            st.num_output_tokens += 1
            self.stats.num_output_tokens += 1
            if st.first_token_time is None:
                st.first_token_time = now
            reason = self._stop_reason(seq, token)
            if reason is not None:
                seq.finish_reason = reason
                st.finish_time = now
                self.scheduler.free(seq)
                self.speculator.release(seq)
                finished.append(seq)
                return

    def _stop_reason(self, seq: Sequence, token: int) -> FinishReason | None:
        p = seq.params
        is_eos = token in self.model_cfg.eos_token_ids
        if (is_eos and not p.ignore_eos) or token in p.stop_token_ids:
            return FinishReason.STOP
        full = len(seq.token_ids) >= self.cfg.max_model_len
        if len(seq.output_token_ids) >= p.max_tokens or full:
            return FinishReason.LENGTH
        return None
