"""LLMEngine: one `step()` = schedule -> (route K, propose) -> run -> verify -> postprocess.

One code path for every step. The speculator routes K per step (or per request) from the schedule;
decoding request i feeds [last token, d_1 .. d_{n_i}] (n_i <= K_i drafts, n_i = 0 is plain
decoding) and gets n_i + 1 logits rows; prefill chunks feed prompt tokens and get a row only when
the prompt completes. Verification (`specsched.engine.verify`) turns the rows into accepted drafts
plus one recovered or bonus token — with no drafts that is exactly plain sampling — and rollback is
num_computed_tokens = old + accepted + 1 (Leviathan et al. 2023, arXiv:2211.17192).
"""

from __future__ import annotations

import dataclasses
import time

import torch

from specsched.engine.attention import build_metadata
from specsched.engine.compiled import check_compile_support
from specsched.engine.config import EngineConfig, ModelConfig
from specsched.engine.drafters.base import DraftBatch, Drafter, DraftProposal
from specsched.engine.kv_cache import KVCache
from specsched.engine.model import LlamaModel
from specsched.engine.prefix_cache import PrefixCache, block_hashes
from specsched.engine.sampling import SamplingParams, make_generator, processed_probs
from specsched.engine.scheduler import ScheduledSeq, Scheduler, SchedulerOutput
from specsched.engine.sequence import Sequence, check_prompt_ids
from specsched.engine.spec_config import NO_SPECULATION, SpeculativeConfig
from specsched.engine.spec_stats import RunStats, StepStats
from specsched.engine.speculator import Speculator, StepPlan, build_drafter
from specsched.engine.verify import VerifyResult, verify_greedy, verify_sampling
from specsched.errors import UserError

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}
ABORTED = "abort"  # finish_reason of a request stopped by `LLMEngine.abort`


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
        spec = speculative or NO_SPECULATION
        drafter = build_drafter(spec, cfg, self.model, self.kv, dtype)
        self.speculator = Speculator(spec, cfg, drafter)
        self.stats = RunStats()
        self.last_step: StepStats | None = None  # the latest step(); None if it ran nothing
        self._next_id = 0

    @property
    def drafter(self) -> Drafter | None:
        return self.speculator.drafter

    def set_speculative(self, speculative: SpeculativeConfig | None) -> None:
        """Swap the speculative config between runs (no request may be in flight); reuses the
        weights, KV cache and prefix cache (benchmarks compare arms on one engine)."""
        if self.has_unfinished():
            raise UserError("cannot change the speculative config while requests are running")
        spec = speculative or NO_SPECULATION
        drafter = build_drafter(spec, self.cfg, self.model, self.kv, DTYPES[self.cfg.dtype])
        self.speculator = Speculator(spec, self.cfg, drafter)

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
        t_start = time.perf_counter()
        self.last_step = None
        out = self.scheduler.schedule()
        if not out.scheduled:
            return []
        plan = self.speculator.plan(out.scheduled)
        decode = [i for i, s in enumerate(out.scheduled) if not s.seq.is_prefilling]
        batch: DraftBatch | None = None
        proposal: DraftProposal | None = None
        t_draft = time.perf_counter()
        if any(plan.num_spec_tokens):  # K = 0 steps never build a draft batch
            batch = self.speculator.draft_batch([out.scheduled[i].seq for i in decode])
            proposal = self.speculator.propose(batch, [plan.num_spec_tokens[i] for i in decode])
        t_verify = time.perf_counter()
        drafts = self._drafts_per_entry(len(out.scheduled), decode, proposal)
        out = SchedulerOutput(
            tuple(
                dataclasses.replace(s, num_new_tokens=s.num_new_tokens + len(d),
                                    num_spec_tokens=len(d))
                for s, d in zip(out.scheduled, drafts, strict=True)
            ),
            out.kv_copies,
        )
        logits = self.run(out, drafts)
        result = self.verify(out, logits, drafts, proposal)
        t_post = time.perf_counter()
        if batch is not None and self.speculator.drafter is not None:
            acc = result.num_accepted.tolist()
            sampled = [i for i, s in enumerate(out.scheduled) if self._samples(s)]
            by_entry = dict(zip(sampled, acc, strict=True))
            self.speculator.drafter.on_verified(batch, [by_entry[i] for i in decode])
        finished = self.postprocess(out, result, plan)
        t_end = time.perf_counter()
        draft_s = t_verify - t_draft if batch is not None else 0.0
        self.last_step = StepStats(
            wall_s=t_end - t_start,
            draft_s=draft_s,
            verify_s=t_post - t_verify,
            overhead_s=(t_end - t_start) - (t_post - t_verify) - draft_s,
            num_decode=len(decode),
            num_prefill=len(out.scheduled) - len(decode),
            num_new_tokens=out.num_tokens,
            num_spec_tokens=sum(s.num_spec_tokens for s in out.scheduled),
            num_accepted_tokens=int(result.num_accepted.sum()),
            routed_k=plan.routed_k if decode else None,
        )
        self.stats.add_step(self.last_step, t_end)
        return finished

    def abort(self, seq: Sequence) -> bool:
        """Stop an unfinished request now: it leaves the queue or frees its slot (its prompt
        blocks stay in the prefix cache), its drafter state is released, and its
        finish_reason becomes "abort". False if it had already finished."""
        if seq.finished:
            return False
        was_running = self.scheduler.abort(seq)
        if was_running and self.speculator.drafter is not None and seq.slot is not None:
            self.speculator.drafter.release(seq.slot)
        seq.finish_reason = ABORTED
        return True

    @staticmethod
    def _drafts_per_entry(
        n: int, decode: list[int], proposal: DraftProposal | None
    ) -> list[list[int]]:
        drafts: list[list[int]] = [[] for _ in range(n)]
        if proposal is not None:
            for i, d in zip(decode, proposal.to_lists(), strict=True):
                drafts[i] = d
        return drafts

    @staticmethod
    def _samples(s: ScheduledSeq) -> bool:
        """Whether the entry yields tokens this step (decode, or the last prompt chunk)."""
        seq = s.seq
        return not seq.is_prefilling or seq.num_computed_tokens + s.num_new_tokens >= len(
            seq.token_ids
        )

    def run(self, out: SchedulerOutput, drafts: list[list[int]]) -> torch.Tensor:
        """One ragged forward; logits rows [sum over sampling entries of (n_i + 1), V]."""
        for c in out.kv_copies:
            self.kv.copy_prefix(c.src_slot, c.dst_slot, c.num_tokens)
        input_ids: list[int] = []
        logits_rows: list[int] = []
        for s, d in zip(out.scheduled, drafts, strict=True):
            seq = s.seq
            start = seq.num_computed_tokens
            input_ids.extend(seq.token_ids[start : start + s.num_new_tokens - len(d)])
            input_ids.extend(d)
            if self._samples(s):  # the last token and every draft get a row
                n = len(input_ids)
                logits_rows.extend(range(n - 1 - len(d), n))
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
        drafts: list[list[int]],
        proposal: DraftProposal | None,
    ) -> VerifyResult:
        """Accepted drafts + recovered/bonus token for every sampling entry (n_i = 0: sample)."""
        seqs = [s.seq for s in out.scheduled if self._samples(s)]
        ks = [len(d) for s, d in zip(out.scheduled, drafts, strict=True) if self._samples(s)]
        flat = torch.tensor([t for d in drafts for t in d], dtype=torch.long, device=self.device)
        if all(seq.params.greedy for seq in seqs):
            return verify_greedy(flat, ks, logits)
        probs = processed_probs(logits, [seq.params for seq in seqs], [k + 1 for k in ks])
        q = None if proposal is None else proposal.draft_probs
        return verify_sampling(flat, ks, q, probs, [seq.generator for seq in seqs])

    def postprocess(
        self, out: SchedulerOutput, result: VerifyResult, plan: StepPlan
    ) -> list[Sequence]:
        now = time.perf_counter()
        finished: list[Sequence] = []
        outputs = result.to_lists()
        accepted = result.num_accepted.tolist()
        run = self.stats
        row = 0
        if any(not s.seq.is_prefilling for s in out.scheduled):
            run.record_k(plan.routed_k)
        for s, k in zip(out.scheduled, plan.num_spec_tokens, strict=True):
            seq = s.seq
            st = seq.stats
            if st.first_scheduled_time is None:
                st.first_scheduled_time = now
            was_prefilling = seq.is_prefilling
            st.num_steps += 1
            st.num_prefill_steps += int(was_prefilling)
            st.num_decode_steps += int(not was_prefilling)
            if not self._samples(s):
                seq.num_computed_tokens += s.num_new_tokens  # mid-prompt chunk
            else:
                tokens, a = outputs[row], accepted[row]
                row += 1
                if was_prefilling:
                    seq.num_computed_tokens += s.num_new_tokens
                else:
                    ctx = seq.num_computed_tokens
                    st.k_histogram[k] = st.k_histogram.get(k, 0) + 1
                    st.spec.record(s.num_spec_tokens, a)
                    run.record_request(self.speculator.bucket(ctx), s.num_spec_tokens, a)
                    seq.num_computed_tokens = ctx + a + 1  # rollback of rejected positions
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
                if self.speculator.drafter is not None and seq.slot is not None:
                    self.speculator.drafter.release(seq.slot)
                finished.append(seq)
                return

    def _stop_reason(self, seq: Sequence, token: int) -> str | None:
        p = seq.params
        is_eos = token in self.model_cfg.eos_token_ids
        if (is_eos and not p.ignore_eos) or token in p.stop_token_ids:
            return "stop"
        full = len(seq.token_ids) >= self.cfg.max_model_len
        if len(seq.output_token_ids) >= p.max_tokens or full:
            return "length"
        return None
