"""Drafter interface: ragged K, K = 0 fast path, state hooks, proposal layout."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch

from specsched.engine.spec.drafters import DraftBatch, Drafter, DraftProposal
from specsched.engine.spec.verify import verify_greedy


class _CountingDrafter(Drafter):
    """Proposes token (last + 1) repeatedly, one fake forward per proposed position."""

    def __init__(self) -> None:
        super().__init__()
        self.kv_len: dict[int, int] = {}

    def _propose(self, batch: DraftBatch, num_spec_tokens: list[int]) -> DraftProposal:
        drafts = [[int(t[-1]) + 1] * k for t, k in zip(batch.token_ids, num_spec_tokens,
                                                      strict=True)]
        self._count_forward(max(num_spec_tokens))
        flat = DraftProposal.from_lists(drafts)
        probs = torch.full((flat.draft_token_ids.numel(), 16), 1 / 16)
        return DraftProposal(flat.draft_token_ids, flat.num_draft_tokens, probs)

    def on_verified(self, batch: DraftBatch, num_accepted: Sequence[int]) -> None:
        for slot, c, a in zip(batch.slot_ids, batch.num_computed_tokens, num_accepted,
                              strict=True):
            self.kv_len[slot] = c + a + 1

    def release(self, slot_id: int) -> None:
        self.kv_len.pop(slot_id, None)


def _batch() -> DraftBatch:
    return DraftBatch(token_ids=[[1, 2], [3, 4, 5]], slot_ids=[7, 9], num_computed_tokens=[1, 2])


def test_zero_k_step_does_no_forward() -> None:
    d = _CountingDrafter()
    prop = d.propose(_batch(), [0, 0])
    assert prop.num_draft_tokens == (0, 0) and prop.draft_token_ids.numel() == 0
    assert d.num_forward_calls == 0 and d.num_propose_calls == 0
    d.propose(_batch(), [2, 0])
    assert d.num_forward_calls == 2 and d.num_propose_calls == 1


def test_propose_verify_rollback_in_step() -> None:
    d = _CountingDrafter()
    batch = _batch()
    prop = d.propose(batch, 2)
    assert prop.to_lists() == [[3, 3], [6, 6]]
    assert prop.draft_probs is not None and prop.draft_probs.shape == (4, 16)
    logits = torch.zeros(6, 16)
    logits[torch.arange(6), torch.tensor([3, 9, 1, 6, 6, 2])] = 1.0
    res = verify_greedy(prop.draft_token_ids, prop.num_draft_tokens, logits)
    assert res.to_lists() == [[3, 9], [6, 6, 2]]
    d.on_verified(batch, res.num_accepted.tolist())
    after = [c + a + 1 for c, a in zip(batch.num_computed_tokens, res.num_accepted.tolist(),
                                       strict=True)]  # the target's KV length after rollback
    assert d.kv_len == dict(zip(batch.slot_ids, after, strict=True)) == {7: 3, 9: 5}
    d.release(7)
    assert 7 not in d.kv_len


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="batch size"):
        DraftBatch(token_ids=[[1]], slot_ids=[0, 1], num_computed_tokens=[0])
    d = _CountingDrafter()
    with pytest.raises(ValueError, match="entries"):
        d.propose(_batch(), [1])
    with pytest.raises(ValueError, match=">= 0"):
        d.propose(_batch(), [1, -1])
    with pytest.raises(ValueError, match="sum"):
        DraftProposal(torch.tensor([1, 2]), (1,))
