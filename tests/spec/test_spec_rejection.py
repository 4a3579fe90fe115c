"""Rejection sampling preserves the target distribution (chi-square, seeded, p > 0.01).

Toy vocabulary of 6 with fixed per-position target rows P[j] and draft rows Q[j]: q has mass
where p has none (token 5) and p has mass where q has none (token 4). Output position j of every
request that emits it must follow P[j], whatever K_i; in particular the first output token and the
bonus tokens. Deliberately wrong samplers must fail the same check, so the check has teeth.
"""

from __future__ import annotations

import pytest
import torch
from scipy.stats import chisquare

from specsched.engine.spec.verify import VerifyResult, verify_sampling

P = torch.tensor([
    [0.40, 0.25, 0.20, 0.10, 0.05, 0.00],
    [0.10, 0.10, 0.30, 0.20, 0.30, 0.00],
    [0.05, 0.50, 0.05, 0.20, 0.20, 0.00],
    [0.25, 0.25, 0.25, 0.05, 0.20, 0.00],
])  # [Kmax + 1, V] target row per position
Q = torch.tensor([
    [0.10, 0.10, 0.40, 0.10, 0.00, 0.30],
    [0.30, 0.10, 0.10, 0.20, 0.00, 0.30],
    [0.20, 0.20, 0.20, 0.20, 0.00, 0.20],
])  # [Kmax, V] draft row per position
N = 40_000
ALPHA = 0.01


def make_generators(seeds: list[int | None]) -> list[torch.Generator | None]:
    """One seeded generator per request (None: unseeded)."""
    return [None if s is None else torch.Generator().manual_seed(s) for s in seeds]


def _ragged_arange(n: torch.Tensor) -> torch.Tensor:  # [sum n]: 0..n_0-1, 0..n_1-1, ...
    starts = torch.repeat_interleave(torch.cumsum(n, 0) - n, n)
    return torch.arange(int(n.sum())) - starts


def _batch(ks: list[int], gen: torch.Generator, one_hot_draft: int | None = None
           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Flattened drafts x_j ~ Q[j] (or a fixed token), Q rows, and K_i + 1 target rows each."""
    k = torch.tensor(ks)
    pos_d = _ragged_arange(k)  # [sum K]
    pos_t = _ragged_arange(k + 1)  # [sum K + B]
    q = Q[pos_d]
    if one_hot_draft is None:
        drafts = torch.multinomial(q, 1, generator=gen).squeeze(1)
    else:
        drafts = torch.full((int(k.sum()),), one_hot_draft)
    return drafts, q, P[pos_t].contiguous()


def _chi2_pvalue(tokens: torch.Tensor, p: torch.Tensor) -> float:
    counts = torch.bincount(tokens, minlength=p.numel()).to(torch.float64)
    pf = p.to(torch.float64)
    support = pf > 0
    if counts[~support].sum() > 0:
        return 0.0  # a token with zero target probability: the statistic is infinite
    expected = pf[support] * counts.sum() / pf[support].sum()
    return float(chisquare(counts[support].numpy(), expected.numpy()).pvalue)


def _position_tokens(res: VerifyResult, j: int) -> torch.Tensor:  # output token j, if emitted
    if j >= res.output_token_ids.shape[1]:
        return torch.empty(0, dtype=torch.long)
    return res.output_token_ids[res.num_output_tokens > j, j]


@pytest.mark.parametrize("ks_cycle", [[1], [3], [0, 1, 2, 3]])
def test_every_output_position_follows_target(ks_cycle: list[int]) -> None:
    gen = torch.Generator().manual_seed(2024)
    torch.manual_seed(2025)
    ks = (ks_cycle * N)[:N]
    drafts, q, p = _batch(ks, gen)
    res = verify_sampling(drafts, ks, q, p)
    assert _chi2_pvalue(_position_tokens(res, 0), P[0]) > ALPHA  # first-position tokens
    for j in range(1, max(ks) + 1):
        sel = _position_tokens(res, j)
        assert sel.numel() > 1000
        assert _chi2_pvalue(sel, P[j]) > ALPHA


def test_bonus_tokens_follow_target() -> None:
    gen = torch.Generator().manual_seed(7)
    torch.manual_seed(8)
    ks = [2] * N
    drafts, q, p = _batch(ks, gen)
    res = verify_sampling(drafts, ks, q, p)
    bonus = res.output_token_ids[res.is_bonus, 2]
    assert bonus.numel() > 1000
    assert _chi2_pvalue(bonus, P[2]) > ALPHA
    recovered_first = res.output_token_ids[res.num_accepted == 0, 0]
    # the recovered token alone is not p-distributed; accepted + recovered together are
    assert _chi2_pvalue(recovered_first, P[0]) < ALPHA


@pytest.mark.parametrize("draft_token", [2, 5, 4])  # q-heavy, p-less, q-less tokens
def test_probability_free_drafter_is_lossless(draft_token: int) -> None:
    torch.manual_seed(5)
    ks = [2] * N
    drafts, _, p = _batch(ks, torch.Generator(), one_hot_draft=draft_token)
    res = verify_sampling(drafts, ks, None, p)
    assert _chi2_pvalue(_position_tokens(res, 0), P[0]) > ALPHA
    second = _position_tokens(res, 1)
    if P[0, draft_token] == 0:
        assert second.numel() == 0  # a token the target never emits is never accepted
    else:
        assert _chi2_pvalue(second, P[1]) > ALPHA
    acc0 = (res.num_accepted >= 1).double().mean().item()
    assert abs(acc0 - P[0, draft_token].item()) < 0.01  # accept with probability p(x)


def _always_accept(drafts: torch.Tensor, ks: list[int], q: torch.Tensor, p: torch.Tensor
                   ) -> torch.Tensor:
    return drafts[torch.cumsum(torch.tensor([0, *ks[:-1]]), 0)]  # first output = first draft


def _resample_from_p(drafts: torch.Tensor, ks: list[int], q: torch.Tensor, p: torch.Tensor
                     ) -> torch.Tensor:
    """Correct acceptance rule, but the rejected position draws from p instead of max(0, p-q)."""
    first_d = torch.cumsum(torch.tensor([0, *ks[:-1]]), 0)
    first_t = first_d + torch.arange(len(ks))
    x, q_x = drafts[first_d], q[first_d, drafts[first_d]]
    p_rows = p[first_t]
    accept = torch.rand(len(ks)) * q_x < p_rows[torch.arange(len(ks)), x]
    return torch.where(accept, x, torch.multinomial(p_rows, 1).squeeze(1))


@pytest.mark.parametrize("wrong", [_always_accept, _resample_from_p])
def test_wrong_samplers_fail_the_check(wrong: object) -> None:
    gen = torch.Generator().manual_seed(11)
    torch.manual_seed(12)
    ks = [2] * N
    drafts, q, p = _batch(ks, gen)
    first = wrong(drafts, ks, q, p)  # type: ignore[operator]
    assert _chi2_pvalue(first, P[0]) < 1e-6


def test_wrong_sampler_fails_on_proportions_alone() -> None:
    torch.manual_seed(13)
    first = torch.multinomial(Q[0, :5] / Q[0, :5].sum(), N, replacement=True)  # no p-less token
    assert _chi2_pvalue(first, P[0]) < 1e-6


def test_seeded_requests_reproducible_across_batches() -> None:
    gen = torch.Generator().manual_seed(3)
    ks = [3, 0, 2, 3]
    drafts, q, p = _batch(ks, gen)
    a = verify_sampling(drafts, ks, q, p, make_generators([10, 11, None, 13]))
    b = verify_sampling(drafts, ks, q, p, make_generators([10, 11, None, 13]))
    rows_a, rows_b = a.to_lists(), b.to_lists()
    for i in (0, 1, 3):
        assert rows_a[i] == rows_b[i]
    # request 3 alone, same seed: same result as inside the batch
    solo = verify_sampling(drafts[5:], [3], q[5:], p[-4:], make_generators([13]))
    assert solo.to_lists()[0] == rows_a[3]
