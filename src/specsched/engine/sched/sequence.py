"""Per-request state (Sequence), its stats, and the user-facing Output."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import Enum

import torch

from specsched.engine.sampling.params import SamplingParams
from specsched.engine.stats import SpecCounters
from specsched.errors import UserError


def check_prompt_ids(prompt_token_ids: list[int], max_model_len: int, vocab_size: int) -> None:
    """UserError if a prompt cannot run: empty, not shorter than max_model_len, ids out of range."""
    n = len(prompt_token_ids)
    if n == 0:
        raise UserError("empty prompt: give at least one token")
    if n >= max_model_len:
        raise UserError(
            f"prompt has {n} tokens but max_model_len is {max_model_len}; "
            "shorten the prompt or raise max_model_len"
        )
    if min(prompt_token_ids) < 0 or max(prompt_token_ids) >= vocab_size:
        raise UserError(f"prompt token ids must be in [0, {vocab_size})")


class FinishReason(str, Enum):
    STOP = "stop"  # EOS (unless ignore_eos) or one of the request's stop_token_ids
    LENGTH = "length"  # max_tokens generated, or the sequence filled max_model_len
    ABORT = "abort"  # stopped by `LLMEngine.abort`


@dataclass(slots=True)
class RequestStats:
    """Counters and timestamps of one request, with its speculative-decoding counters."""

    arrival_time: float = field(default_factory=time.perf_counter)
    first_scheduled_time: float | None = None
    first_token_time: float | None = None
    finish_time: float | None = None
    num_steps: int = 0  # engine steps this request took part in
    num_prefill_steps: int = 0
    num_decode_steps: int = 0
    num_prompt_tokens: int = 0
    num_cached_tokens: int = 0  # prompt tokens served by the prefix cache
    num_output_tokens: int = 0
    spec: SpecCounters = field(default_factory=SpecCounters)
    k_histogram: dict[int, int] = field(default_factory=dict)  # K this request got -> steps

    @property
    def ttft_s(self) -> float | None:
        """Time to first token, from arrival."""
        if self.first_token_time is None:
            return None
        return self.first_token_time - self.arrival_time

    @property
    def decode_tokens_per_s(self) -> float | None:
        """Output tokens after the first, per second of decoding."""
        if self.finish_time is None or self.first_token_time is None:
            return None
        dt = self.finish_time - self.first_token_time
        return (self.num_output_tokens - 1) / dt if dt > 0 and self.num_output_tokens > 1 else None

    def to_dict(self) -> dict[str, object]:
        return {
            "num_steps": self.num_steps,
            "num_prefill_steps": self.num_prefill_steps,
            "num_decode_steps": self.num_decode_steps,
            "num_prompt_tokens": self.num_prompt_tokens,
            "num_cached_tokens": self.num_cached_tokens,
            "num_output_tokens": self.num_output_tokens,
            "ttft_s": self.ttft_s,
            "decode_tokens_per_s": self.decode_tokens_per_s,
            "e2e_s": None if self.finish_time is None else self.finish_time - self.arrival_time,
            "k_histogram": {str(k): n for k, n in sorted(self.k_histogram.items())},
            **self.spec.to_dict(),
        }


class Sequence:
    """One request in flight. `token_ids` = prompt + output; the first `num_computed_tokens`
    of them have K/V in the slot. Rollback = lowering num_computed_tokens (and truncating
    token_ids)."""

    def __init__(
        self,
        request_id: int,
        prompt_token_ids: list[int],
        params: SamplingParams,
        generator: torch.Generator | None,
        block_hashes: list[bytes],
        prompt: str | None = None,
    ) -> None:
        self.request_id = request_id
        self.prompt = prompt
        self.token_ids: list[int] = list(prompt_token_ids)
        self.num_prompt_tokens = len(prompt_token_ids)
        self.num_computed_tokens = 0
        self.slot: int | None = None
        self.params = params
        self.generator = generator
        self.block_hashes = block_hashes
        self.finish_reason: FinishReason | None = None
        self.stats = RequestStats(num_prompt_tokens=len(prompt_token_ids))

    @property
    def output_token_ids(self) -> list[int]:
        return self.token_ids[self.num_prompt_tokens :]

    @property
    def is_prefilling(self) -> bool:
        return self.num_computed_tokens < self.num_prompt_tokens

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None


@dataclass(frozen=True, slots=True)
class Output:
    request_id: int
    prompt: str | None
    prompt_token_ids: list[int]
    token_ids: list[int]  # generated tokens only
    text: str
    finish_reason: FinishReason
    stats: RequestStats
