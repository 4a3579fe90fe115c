"""Greedy verification on hand cases, ragged K (incl. K = 0), and sampling == greedy at T = 0."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from specsched.engine.sampling.probs import logits_to_probs
from specsched.engine.spec.verify import PLACEHOLDER_TOKEN_ID, verify_greedy, verify_sampling

V = 8


def _rows(argmaxes: list[int]) -> torch.Tensor:  # [N, V] logits with the given argmax per row
    logits = torch.zeros(len(argmaxes), V)
    logits[torch.arange(len(argmaxes)), torch.tensor(argmaxes)] = 5.0
    return logits


def test_all_accepted_gives_bonus() -> None:
    res = verify_greedy(torch.tensor([3, 4, 5]), [3], _rows([3, 4, 5, 6]))
    assert res.num_accepted.tolist() == [3]
    assert res.to_lists() == [[3, 4, 5, 6]]
    assert res.is_bonus.tolist() == [True]
    assert 3 - int(res.num_accepted[0]) == 0  # nothing rolled back
    assert 10 + int(res.num_accepted[0]) + 1 == 14  # KV valid after the step


def test_first_mismatch_gives_recovered() -> None:
    res = verify_greedy(torch.tensor([3, 4, 5]), [3], _rows([3, 7, 5, 6]))
    assert res.num_accepted.tolist() == [1]
    assert res.to_lists() == [[3, 7]]
    assert (~res.is_bonus).tolist() == [True]  # the last token is a recovered one
    assert 3 - int(res.num_accepted[0]) == 2  # rolled back
    assert res.output_token_ids[0].tolist() == [3, 7, PLACEHOLDER_TOKEN_ID, PLACEHOLDER_TOKEN_ID]
    assert 10 + int(res.num_accepted[0]) + 1 == 12


def test_mismatch_at_first_position() -> None:
    res = verify_greedy(torch.tensor([1, 2]), [2], _rows([0, 2, 3]))
    assert res.to_lists() == [[0]]
    assert res.num_accepted.tolist() == [0]


def test_ragged_batch_with_zero_k() -> None:
    # req0 K=2 all accepted; req1 K=0 (plain decode); req2 K=3 reject at 2; req3 K=1 reject at 0
    drafts = torch.tensor([1, 2, 4, 4, 4, 6])
    target = _rows([1, 2, 3,  5,  4, 4, 0, 1,  7, 2])
    res = verify_greedy(drafts, [2, 0, 3, 1], target)
    assert res.num_accepted.tolist() == [2, 0, 2, 0]
    assert res.to_lists() == [[1, 2, 3], [5], [4, 4, 0], [7]]
    assert res.is_bonus.tolist() == [True, True, False, False]
    assert res.num_output_tokens.tolist() == [3, 1, 3, 1]
    assert res.output_token_ids.shape == (4, 4)


def test_all_zero_k_is_plain_decoding() -> None:
    res = verify_greedy(torch.empty(0, dtype=torch.long), [0, 0], _rows([3, 1]))
    assert res.to_lists() == [[3], [1]]
    assert res.is_bonus.all()


def test_layout_errors() -> None:
    import pytest

    with pytest.raises(ValueError, match="rows"):
        verify_greedy(torch.tensor([1, 2]), [2], _rows([1, 2]))  # needs 3 target rows
    with pytest.raises(ValueError, match="sum"):
        verify_greedy(torch.tensor([1]), [2], _rows([1, 2, 3]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=6), st.integers(0, 2**31 - 1))
def test_sampling_at_temperature_zero_equals_greedy(ks: list[int], seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    total = sum(ks)
    logits = torch.randn(total + len(ks), V, generator=gen)
    # drafts agree with the argmax often enough to exercise acceptance
    argmax = logits.argmax(-1)
    keep = torch.ones(total + len(ks), dtype=torch.bool)
    starts = torch.cumsum(torch.tensor([0, *ks[:-1]]), 0) + torch.arange(len(ks))
    for s, k in zip(starts.tolist(), ks, strict=True):
        keep[s + k] = False  # drop bonus rows
    guess = torch.randint(0, V, (total,), generator=gen)
    drafts = torch.where(torch.rand(total, generator=gen) < 0.7, argmax[keep], guess)
    q = torch.softmax(torch.randn(total, V, generator=gen), -1)
    greedy = verify_greedy(drafts, ks, logits)
    sampled = verify_sampling(drafts, ks, q, logits_to_probs(logits, 0.0))
    assert sampled.to_lists() == greedy.to_lists()
    assert torch.equal(sampled.is_bonus, greedy.is_bonus)
