"""top-k / top-p filtering and SamplingParams validation."""

from __future__ import annotations

import pytest
import torch

from specsched.engine.sampling.params import SamplingParams
from specsched.engine.sampling.sampler import processed_probs
from specsched.errors import UserError


def filtered_probs(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:  # [V]
    return processed_probs(logits[None], [params])[0]


def test_top_k_and_top_p_filter() -> None:
    logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    p = filtered_probs(logits, SamplingParams(temperature=1.0, top_k=2))
    assert torch.allclose(p, torch.tensor([0.625, 0.375, 0.0, 0.0]))
    p = filtered_probs(logits, SamplingParams(temperature=1.0, top_p=0.7))
    assert torch.allclose(p, torch.tensor([0.625, 0.375, 0.0, 0.0]))
    p = filtered_probs(logits, SamplingParams(temperature=1.0, top_p=0.4))
    assert torch.allclose(p, torch.tensor([1.0, 0.0, 0.0, 0.0]))


@pytest.mark.parametrize(
    "kwargs", [{"max_tokens": 0}, {"temperature": -1.0}, {"top_k": -1}, {"top_p": 0.0}]
)
def test_bad_sampling_params(kwargs: dict[str, float]) -> None:
    with pytest.raises(UserError):
        SamplingParams(**kwargs)  # type: ignore[arg-type]
