"""`LLM`: the user-facing API. `LLM(model=...).generate(prompts, SamplingParams(...))`."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence as Seq
from typing import Any

from specsched.corpus import corpus_token_ids
from specsched.engine.config import EngineConfig
from specsched.engine.engine import LLMEngine
from specsched.engine.loading.registry import DEFAULT_MODEL, load_model
from specsched.engine.loading.tokenizer import TextTokenizer
from specsched.engine.sampling.sampler import SamplingParams
from specsched.engine.sched.sequence import FinishReason, Output, Sequence
from specsched.engine.spec.config import SpeculativeConfig
from specsched.engine.stats import RunStats
from specsched.errors import UserError

Prompt = str | list[int]


class LLM:
    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        dtype: str = "float32",
        device: str = "cpu",
        max_num_seqs: int = 8,
        max_model_len: int = 2048,
        max_num_batched_tokens: int = 512,
        enable_prefix_caching: bool = True,
        num_threads: int | None = None,
        speculative: SpeculativeConfig | None = None,
        compile: bool = False,
    ) -> None:
        """`speculative=None` (or drafter "none") decodes without speculation; see
        `SpeculativeConfig` for drafters and per-step K schedules."""
        self.config = EngineConfig(
            max_num_seqs=max_num_seqs,
            max_model_len=max_model_len,
            max_num_batched_tokens=max(max_num_batched_tokens, max_num_seqs),
            enable_prefix_caching=enable_prefix_caching,
            dtype=dtype,
            device=device,
            num_threads=num_threads,
            compile=compile,
        )
        loaded = load_model(model)
        self.model_name = loaded.name
        self.tokenizer: TextTokenizer | None = loaded.tokenizer
        self.engine = LLMEngine(loaded.config, loaded.weights, self.config, speculative)
        self.last_run_stats: RunStats | None = None  # aggregate stats of the last generate()

    def encode_prompt(self, prompt: Prompt, use_chat_template: bool = False) -> list[int]:
        if not isinstance(prompt, str):
            return list(prompt)
        if self.tokenizer is None:
            raise UserError(f"{self.model_name}: no tokenizer.json; pass token ids, not text")
        try:  # text with lone surrogates (undecodable bytes, PEP 383) is refused, not replaced
            prompt.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise UserError(f"prompt is not valid Unicode text (a lone surrogate at character "
                            f"{exc.start}); pass UTF-8 text") from None
        if use_chat_template:
            prompt = self.tokenizer.apply_chat_template([{"role": "user", "content": prompt}])
        return self.tokenizer.encode(prompt)

    def corpus_token_ids(self) -> list[int]:
        """The offline text corpus (`specsched.corpus`) in this model's tokens: what profiles and
        benchmarks cut their exact-length prompts from."""
        encode = None if self.tokenizer is None else self.tokenizer.encode
        return corpus_token_ids(encode, self.engine.model_cfg.vocab_size)

    def generate(
        self,
        prompts: Prompt | Seq[Prompt],
        sampling_params: SamplingParams | Seq[SamplingParams] | None = None,
        *,
        use_chat_template: bool = False,
        on_step: Callable[[int], None] | None = None,
    ) -> list[Output]:
        """Generate for every prompt (continuous batching); outputs in prompt order.

        Per-request stats (incl. drafted / accepted per draft position) are in `Output.stats`;
        the aggregate of this call (steps, K histogram, acceptance per context bucket, time split
        draft / verify / overhead, tokens/s) is `self.last_run_stats`.

        `on_step(n)` is called after each engine step with the number of requests finished in it
        (a progress-bar hook).
        """
        items: list[Any] = [prompts] if isinstance(prompts, str) else list(prompts)
        if items and all(isinstance(t, int) for t in items):
            items = [items]  # one prompt given as token ids
        prompt_list: list[Prompt] = [p if isinstance(p, str) else list(p) for p in items]
        if sampling_params is None:
            sampling_params = SamplingParams()
        params = (
            [sampling_params] * len(prompt_list)
            if isinstance(sampling_params, SamplingParams)
            else list(sampling_params)
        )
        if len(params) != len(prompt_list):
            raise UserError(f"got {len(prompt_list)} prompts but {len(params)} SamplingParams")
        encoded = [self.encode_prompt(p, use_chat_template) for p in prompt_list]
        for ids in encoded:  # validate all before queueing any
            self.engine.check_prompt(ids)
        seqs: list[Sequence] = [
            self.engine.add_request(ids, p, prompt if isinstance(prompt, str) else None)
            for ids, p, prompt in zip(encoded, params, prompt_list, strict=True)
        ]
        self.engine.reset_stats()
        while self.engine.has_unfinished():
            finished = self.engine.step()
            if on_step is not None:
                on_step(len(finished))
        self.last_run_stats = self.engine.reset_stats()
        return [self._output(s) for s in seqs]

    def _output(self, seq: Sequence) -> Output:
        out_ids = seq.output_token_ids
        text = "" if self.tokenizer is None else self.tokenizer.decode(out_ids)
        return Output(
            request_id=seq.request_id,
            prompt=seq.prompt,
            prompt_token_ids=seq.token_ids[: seq.num_prompt_tokens],
            token_ids=out_ids,
            text=text,
            finish_reason=seq.finish_reason or FinishReason.LENGTH,
            stats=seq.stats,
        )
