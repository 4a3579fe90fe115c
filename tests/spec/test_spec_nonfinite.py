"""NaN / inf logits and probabilities never crash verification or sampling, and never yield a
token outside [0, V) (issue 13). The defined behaviour (`specsched.engine.sampling.probs`): NaN
counts as -inf; +inf entries share a row's mass; a row with nothing finite is uniform; weights
that are NaN, inf or negative count as 0 and a weightless row is uniform."""

from __future__ import annotations

import pytest
import torch

from specsched.engine.sampling.probs import (
    finite_logits,
    finite_weights,
    logits_to_probs,
    sample_from_probs,
)
from specsched.engine.spec.verify import verify_greedy, verify_sampling

NAN, INF = float("nan"), float("inf")
V = 6


def rows() -> torch.Tensor:  # [7, V]
    return torch.tensor([
        [0.0, 1.0, 2.0, 0.5, -1.0, 0.0],  # finite: argmax 2
        [NAN, 1.0, NAN, 3.0, NAN, 0.0],  # some NaN: argmax 3
        [NAN] * V,  # all NaN: uniform, greedy 0
        [-INF] * V,  # all -inf: uniform, greedy 0
        [1.0, INF, 2.0, INF, NAN, -INF],  # +inf twice: tokens 1 and 3 share the mass
        [INF] * V,  # all +inf: uniform
        [-INF, -INF, 5.0, NAN, -INF, -INF],  # one finite: always 2
    ])


def test_finite_logits_rule() -> None:
    x = finite_logits(rows())
    assert not torch.isnan(x).any() and not (x == INF).any()
    assert x.argmax(-1).tolist() == [2, 3, 0, 0, 1, 0, 2]
    clean = torch.randn(3, V)
    assert finite_logits(clean) is clean  # no copy when already finite


@pytest.mark.parametrize("top", [(None, None), (3, None), (None, 0.5), (2, 0.9)])
@pytest.mark.parametrize("temperature", [0.0, 0.7, 1e-6, 1e6])
def test_logits_to_probs_is_a_distribution(top: tuple[int | None, float | None],
                                           temperature: float) -> None:
    n = rows().shape[0]
    top_k = None if top[0] is None else torch.full((n,), top[0])
    top_p = None if top[1] is None else torch.full((n,), top[1])
    p = logits_to_probs(rows(), temperature, top_k, top_p)
    assert torch.isfinite(p).all() and (p >= 0).all()
    assert torch.allclose(p.sum(-1), torch.ones(n), atol=1e-5)
    if temperature == 0.0:
        assert p.argmax(-1).tolist() == [2, 3, 0, 0, 1, 0, 2]
    assert p[4, [0, 2, 4, 5]].sum() == 0 and p[6, 2] == 1.0  # +inf tokens / the one finite


def test_sample_from_probs_never_out_of_range() -> None:
    weights = torch.tensor([
        [NAN] * V, [0.0] * V, [-1.0] * V, [INF, 0.0, 0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0, 0.0, 2.0], [NAN, -3.0, 0.0, 0.5, INF, 0.0],
    ])
    gen = torch.Generator().manual_seed(0)
    seen: list[set[int]] = [set() for _ in range(weights.shape[0])]
    for _ in range(300):
        out = sample_from_probs(weights, [gen] * weights.shape[0])
        assert ((out >= 0) & (out < V)).all()
        for r, t in enumerate(out.tolist()):
            seen[r].add(t)
    assert seen[0] == seen[1] == seen[2] == seen[3] == set(range(V))  # weightless: uniform
    assert seen[4] == {5} and seen[5] == {3}


def test_finite_weights() -> None:
    w = torch.tensor([[NAN, -1.0, INF, 0.25]])
    assert finite_weights(w).tolist() == [[0.0, 0.0, 0.0, 0.25]]
    clean = torch.rand(2, 3)
    assert finite_weights(clean) is clean


def _ragged(ks: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Target rows [sum K + B, V] cycling through the hostile rows; drafts [sum K] in range."""
    n_rows = sum(ks) + len(ks)
    target = rows()[torch.arange(n_rows) % rows().shape[0]]
    drafts = torch.arange(sum(ks)) % V
    return target, drafts


@pytest.mark.parametrize("ks", [[0], [3], [2, 0, 4, 1], [5, 5, 5]])
def test_verify_greedy_with_nonfinite_logits(ks: list[int]) -> None:
    target, drafts = _ragged(ks)
    res = verify_greedy(drafts, ks, target)
    out = res.output_token_ids
    valid = torch.arange(out.shape[1])[None, :] <= res.num_accepted[:, None]
    assert ((out[valid] >= 0) & (out[valid] < V)).all()
    expect = finite_logits(target).argmax(-1)  # greedy follows the documented rule
    start = 0
    for i, k in enumerate(ks):
        a = int(res.num_accepted[i])
        assert out[i, a] == expect[start + a]
        start += k + 1


@pytest.mark.parametrize("with_q", [False, True])
@pytest.mark.parametrize("ks", [[0], [3], [2, 0, 4, 1]])
def test_verify_sampling_with_nonfinite_probs(ks: list[int], with_q: bool) -> None:
    target, drafts = _ragged(ks)
    p = rows()[torch.arange(target.shape[0]) % rows().shape[0]].abs()  # NaN/inf "probs"
    q = None
    if with_q:
        q = torch.rand(sum(ks), V)
        q[::2, 1] = NAN
        q[1::3, 2] = -INF
    gens = [torch.Generator().manual_seed(i) for i in range(len(ks))]
    for _ in range(50):
        res = verify_sampling(drafts, ks, q, p, gens)
        out = res.output_token_ids
        valid = torch.arange(out.shape[1])[None, :] <= res.num_accepted[:, None]
        assert ((out[valid] >= 0) & (out[valid] < V)).all()
        assert ((res.num_accepted >= 0) & (res.num_accepted <= torch.tensor(ks))).all()
    probs = logits_to_probs(target, 0.8)  # processed from hostile logits: a clean p
    res = verify_sampling(drafts, ks, q, probs, gens)
    assert (res.output_token_ids.max() < V).all()
