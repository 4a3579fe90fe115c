"""SamplingParams and the engine's one sampling rule (greedy, temperature, top-k, top-p, seeded).

Plain decoding and speculative verification build the processed distribution with the same
function, `specsched.engine.sampling_math.logits_to_probs` (vLLM's top-p boundary: a token is
dropped once the mass before it reaches top_p), so "spec == no-spec in distribution" compares
like with like, and a K = 0 step samples exactly as a request that never speculates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from specsched.engine.sampling_math import expand_per_request, logits_to_probs, sample_from_probs
from specsched.errors import UserError


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """temperature 0 = greedy. `seed` makes a request's samples independent of batch mates."""

    max_tokens: int = 64
    temperature: float = 0.0
    top_k: int = 0  # 0 = off
    top_p: float = 1.0
    seed: int | None = None
    ignore_eos: bool = False
    stop_token_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise UserError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.temperature < 0:
            raise UserError(f"temperature must be >= 0, got {self.temperature}")
        if self.top_k < 0:
            raise UserError(f"top_k must be >= 0 (0 disables it), got {self.top_k}")
        if not 0.0 < self.top_p <= 1.0:
            raise UserError(f"top_p must be in (0, 1], got {self.top_p}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


def make_generator(params: SamplingParams, device: torch.device | str) -> torch.Generator | None:
    if params.greedy:
        return None
    gen = torch.Generator(device=device)
    if params.seed is None:
        gen.seed()
    else:
        gen.manual_seed(params.seed)
    return gen


def processed_probs(
    logits: torch.Tensor,  # [N, V]
    params: Sequence[SamplingParams],  # [B]
    num_rows: Sequence[int] | None = None,  # [B] rows per request (sum = N); None: one each
) -> torch.Tensor:  # [N, V] float32
    """softmax(top_p(top_k(logits / T))) per row with its request's settings (T = 0: one-hot)."""
    rows = [1] * len(params) if num_rows is None else list(num_rows)
    temp = expand_per_request([p.temperature for p in params], rows, torch.float32)
    top_k = top_p = None
    if any(p.top_k > 0 for p in params):
        top_k = expand_per_request([p.top_k for p in params], rows, torch.long)
    if any(p.top_p < 1.0 for p in params):
        top_p = expand_per_request([p.top_p for p in params], rows, torch.float32)
    return logits_to_probs(logits, temp.to(logits.device), top_k, top_p)


def filtered_probs(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:  # [V] -> [V]
    """Softmax of logits/temperature after top-k and top-p filtering (one request, one row)."""
    return processed_probs(logits[None], [params])[0]


def sample_token(
    logits: torch.Tensor,  # [V]
    params: SamplingParams,
    generator: torch.Generator | None,
) -> int:
    """One token from one row, by the same rule the batched verify path uses."""
    if params.greedy:
        return int(torch.argmax(logits).item())
    probs = filtered_probs(logits, params)
    return int(sample_from_probs(probs[None], [generator])[0].item())
