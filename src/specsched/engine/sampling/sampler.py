"""The engine's one sampling rule (greedy, temperature, top-k, top-p, seeded).

Plain decoding and speculative verification build the processed distribution with the same
function, `specsched.engine.sampling.probs.logits_to_probs` (vLLM's top-p boundary: a token is
dropped once the mass before it reaches top_p), so "spec == no-spec in distribution" compares
like with like, and a K = 0 step samples exactly as a request that never speculates.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from specsched.engine.sampling.params import SamplingParams
from specsched.engine.sampling.probs import expand_per_request, logits_to_probs


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
