"""Processed distributions (temperature / top-k / top-p) and the seeded categorical sampler."""

from __future__ import annotations

import torch
from scipy.stats import chisquare

from specsched.engine.sampling.probs import (
    expand_per_request,
    logits_to_probs,
    sample_from_probs,
)


def make_generators(seeds: list[int | None]) -> list[torch.Generator | None]:
    """One seeded generator per request (None: unseeded)."""
    return [None if s is None else torch.Generator().manual_seed(s) for s in seeds]


def test_temperature_zero_is_one_hot() -> None:
    logits = torch.tensor([[0.1, 2.0, -1.0], [3.0, 0.0, 0.0]])
    probs = logits_to_probs(logits, torch.tensor([0.0, 1.0]))
    assert probs[0].tolist() == [0.0, 1.0, 0.0]
    assert torch.allclose(probs[1], logits[1].softmax(-1))


def test_temperature_scales() -> None:
    logits = torch.tensor([[1.0, 2.0, 3.0]])
    assert torch.allclose(logits_to_probs(logits, 0.5), (logits / 0.5).softmax(-1))


def test_top_k_and_top_p() -> None:
    logits = torch.log(torch.tensor([[0.5, 0.2, 0.2, 0.1], [0.5, 0.2, 0.2, 0.1]]))
    probs = logits_to_probs(logits, 1.0, top_k=torch.tensor([2, 0]))
    assert (probs[0] > 0).sum() == 3  # the tie with the 2nd largest is kept (vLLM)
    assert torch.allclose(probs[1], logits[1].softmax(-1))  # 0: disabled
    probs = logits_to_probs(logits, 1.0, top_k=torch.tensor([1, 3]))
    assert probs[0].tolist() == [1.0, 0.0, 0.0, 0.0] and (probs[1] > 0).sum() == 3
    probs = logits_to_probs(logits, 1.0, top_p=torch.tensor([0.6, 1.0]))
    assert ((probs[0] > 0).sum().item(), (probs[1] > 0).sum().item()) == (2, 4)
    probs = logits_to_probs(logits, 1.0, top_p=torch.tensor([0.1, 0.5]))
    assert probs[0].tolist() == [1.0, 0.0, 0.0, 0.0]  # the top token is always kept
    assert probs[1].tolist() == [1.0, 0.0, 0.0, 0.0]


def test_expand_per_request() -> None:
    assert expand_per_request([0.5, 1.0, 0.0], [2, 1, 3]).tolist() == [0.5, 0.5, 1, 0, 0, 0]


def test_sample_from_probs_distribution_and_seeding() -> None:
    p = torch.tensor([0.5, 0.3, 0.2, 0.0])
    torch.manual_seed(0)
    draws = sample_from_probs(p.expand(30_000, 4))
    counts = torch.bincount(draws, minlength=4)
    assert counts[3] == 0
    assert chisquare(counts[:3].numpy(), (p[:3] * 30_000).double().numpy()).pvalue > 0.01
    probs = torch.softmax(torch.randn(3, 50), -1)
    a = sample_from_probs(probs, make_generators([1, None, 2]))
    b = sample_from_probs(probs, make_generators([1, None, 2]))
    assert a[0] == b[0] and a[2] == b[2]
