"""LLMEngine: one `step()` = schedule -> run (one ragged forward) -> postprocess (sample, stop)."""

from __future__ import annotations

import time

import torch

from specsched.engine.attention import build_metadata
from specsched.engine.config import EngineConfig, ModelConfig
from specsched.engine.kv_cache import KVCache
from specsched.engine.model import LlamaModel
from specsched.engine.prefix_cache import PrefixCache, block_hashes
from specsched.engine.sampling import SamplingParams, make_generator, sample_token
from specsched.engine.scheduler import Scheduler, SchedulerOutput
from specsched.engine.sequence import Sequence
from specsched.errors import UserError

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


class LLMEngine:
    def __init__(
        self, model_cfg: ModelConfig, weights: dict[str, torch.Tensor], cfg: EngineConfig
    ) -> None:
        if cfg.device.startswith("cuda") and not torch.cuda.is_available():
            raise UserError(f"device {cfg.device!r} requested but CUDA is not available")
        if cfg.num_threads is not None and cfg.device == "cpu":
            torch.set_num_threads(cfg.num_threads)
        self.model_cfg = model_cfg
        self.cfg = cfg
        self.device = torch.device(cfg.device)
        dtype = DTYPES[cfg.dtype]
        self.model = LlamaModel(model_cfg, weights, cfg.max_model_len, dtype, self.device)
        self.kv = KVCache(model_cfg, cfg.max_num_seqs, cfg.max_model_len, dtype, self.device)
        self.prefix_cache = (
            PrefixCache(cfg.max_num_seqs, cfg.block_size) if cfg.enable_prefix_caching else None
        )
        self.scheduler = Scheduler(cfg, self.prefix_cache)
        self._next_id = 0

    def check_prompt(self, prompt_token_ids: list[int]) -> None:
        """UserError if the prompt cannot run on this engine (empty, too long, bad ids)."""
        n = len(prompt_token_ids)
        if n == 0:
            raise UserError("empty prompt: give at least one token")
        if n >= self.cfg.max_model_len:
            raise UserError(
                f"prompt has {n} tokens but max_model_len is {self.cfg.max_model_len}; "
                "shorten the prompt or raise max_model_len"
            )
        vocab = self.model_cfg.vocab_size
        if min(prompt_token_ids) < 0 or max(prompt_token_ids) >= vocab:
            raise UserError(f"prompt token ids must be in [0, {vocab})")

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
        out = self.scheduler.schedule()
        if not out.scheduled:
            return []
        logits = self.run(out)
        return self.postprocess(out, logits)

    def run(self, out: SchedulerOutput) -> torch.Tensor:  # [num_sampling_seqs, V]
        """One ragged forward over all scheduled sequences; logits only where we sample."""
        for c in out.kv_copies:
            self.kv.copy_prefix(c.src_slot, c.dst_slot, c.num_tokens)
        input_ids: list[int] = []
        logits_rows: list[int] = []
        for s in out.scheduled:
            seq = s.seq
            start = seq.num_computed_tokens
            input_ids.extend(seq.token_ids[start : start + s.num_new_tokens])
            if start + s.num_new_tokens == len(seq.token_ids):
                logits_rows.append(len(input_ids) - 1)  # last token: sample the next one
        meta = build_metadata(
            [s.seq.slot for s in out.scheduled if s.seq.slot is not None],
            [s.seq.num_computed_tokens for s in out.scheduled],
            [s.num_new_tokens for s in out.scheduled],
            self.device,
        )
        ids = torch.tensor(input_ids, dtype=torch.long, device=self.device)  # [T]
        rows = torch.tensor(logits_rows, dtype=torch.long, device=self.device)  # [N]
        return self.model(ids, meta, self.kv, rows)

    def postprocess(self, out: SchedulerOutput, logits: torch.Tensor) -> list[Sequence]:
        now = time.perf_counter()
        finished: list[Sequence] = []
        row = 0
        for s in out.scheduled:
            seq = s.seq
            st = seq.stats
            if st.first_scheduled_time is None:
                st.first_scheduled_time = now
            was_prefilling = seq.is_prefilling
            st.num_steps += 1
            st.num_prefill_steps += int(was_prefilling)
            st.num_decode_steps += int(not was_prefilling)
            seq.num_computed_tokens += s.num_new_tokens
            if self.prefix_cache is not None and was_prefilling:
                assert seq.slot is not None
                self.prefix_cache.register(seq.slot, seq.block_hashes, seq.num_computed_tokens)
            if seq.num_computed_tokens < len(seq.token_ids):
                continue  # mid-prompt chunk: nothing to sample yet
            token = sample_token(logits[row], seq.params, seq.generator)
            row += 1
            seq.token_ids.append(token)
            st.num_output_tokens += 1
            if st.first_token_time is None:
                st.first_token_time = now
            reason = self._stop_reason(seq, token)
            if reason is not None:
                seq.finish_reason = reason
                st.finish_time = now
                self.scheduler.free(seq)
                finished.append(seq)
        return finished

    def _stop_reason(self, seq: Sequence, token: int) -> str | None:
        p = seq.params
        is_eos = token in self.model_cfg.eos_token_ids
        if (is_eos and not p.ignore_eos) or token in p.stop_token_ids:
            return "stop"
        full = len(seq.token_ids) >= self.cfg.max_model_len
        if len(seq.output_token_ids) >= p.max_tokens or full:
            return "length"
        return None
