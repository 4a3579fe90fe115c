"""N-gram prompt-lookup drafter: match, no match, k truncation, min/max, earliest occurrence."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specsched.engine.spec.drafters import DraftBatch, NgramConfig, NgramDrafter, ngram_propose
from specsched.errors import UserError


def _brute(tokens: list[int], k: int, lo: int, hi: int) -> list[int]:
    """Reference: longest n from hi down to lo; earliest start j with a follower; next k."""
    t = len(tokens)
    for n in range(hi, lo - 1, -1):
        if n > t - 1:
            continue
        for j in range(0, t - n):
            if tokens[j : j + n] == tokens[t - n :]:
                return tokens[j + n : j + n + k]
    return []


def _p(tokens: list[int], k: int, lo: int, hi: int) -> list[int]:
    return ngram_propose(tokens, k, lo, hi).tolist()


def test_vllm_docstring_example() -> None:
    # vLLM: [1,2,3,4,2,3], min 2, max 3, k 4 -> [4,2,3] (only three tokens follow the match)
    assert _p([1, 2, 3, 4, 2, 3], 4, 2, 3) == [4, 2, 3]


def test_no_match_proposes_nothing() -> None:
    assert _p([1, 2, 3, 4, 5], 3, 1, 3) == []
    assert _p([7], 3, 1, 3) == []
    assert _p([], 3, 1, 3) == []


def test_k_truncation() -> None:
    seq = [5, 6, 7, 8, 9, 10, 5, 6]
    assert _p(seq, 2, 2, 2) == [7, 8]
    assert _p(seq, 10, 2, 2) == [7, 8, 9, 10, 5, 6]
    assert _p(seq, 0, 2, 2) == []


def test_min_and_max() -> None:
    seq = [1, 2, 9, 3, 2, 8, 3, 1, 2]
    # suffix 2-gram [1, 2] occurs at 0 -> [9, 3]; with min 3 nothing matches
    assert _p(seq, 2, 2, 4) == [9, 3]
    assert _p(seq, 2, 3, 4) == []
    # with min 1, the 1-gram [2] also occurs, but the longer match wins
    assert _p(seq, 2, 1, 4) == [9, 3]
    # max caps the length tried: only 1-grams -> earliest [2] at index 1 -> [9, 3]
    assert _p(seq, 2, 1, 1) == [9, 3]


def test_longest_match_beats_more_recent_shorter_match() -> None:
    seq = [4, 1, 2, 3, 50, 0, 2, 3, 60, 1, 2, 3]
    assert _p(seq, 1, 1, 3) == [50]  # 3-gram [1,2,3] at 1, not the 2-gram [2,3] at 6
    assert _p(seq, 1, 1, 2) == [50]  # 2-gram [2,3]: earliest occurrence at 2 (vLLM's rule)


def test_earliest_occurrence_is_used() -> None:
    seq = [1, 2, 10, 1, 2, 20, 1, 2, 30, 1, 2]
    assert _p(seq, 1, 2, 2) == [10]


def test_overlapping_occurrence() -> None:
    assert _p([1, 1, 1, 1], 4, 1, 3) == [1]  # [1,1,1] at 0, one follower
    assert _p([3, 3, 3, 3, 3, 3], 2, 2, 2) == [3, 3]


def test_config_validation() -> None:
    with pytest.raises(UserError, match="prompt_lookup_min"):
        NgramConfig(prompt_lookup_min=0)
    with pytest.raises(UserError, match="prompt_lookup_max"):
        NgramConfig(prompt_lookup_min=3, prompt_lookup_max=2)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=40), st.integers(0, 6), st.integers(1, 4),
       st.integers(0, 3))
def test_matches_brute_force_reference(tokens: list[int], k: int, lo: int, extra: int) -> None:
    assert _p(tokens, k, lo, lo + extra) == _brute(tokens, k, lo, lo + extra)


def test_long_sequence_8k() -> None:
    rng = np.random.default_rng(0)
    seq = rng.integers(0, 32_000, size=8192)
    seq[-3:] = seq[1000:1003]
    assert ngram_propose(seq, 5, 1, 3).tolist() == seq[1003:1008].tolist()
    low_vocab = rng.integers(0, 4, size=8192)  # many candidate matches
    assert ngram_propose(low_vocab, 4, 2, 5).tolist() == _brute(low_vocab.tolist(), 4, 2, 5)


def test_drafter_ragged_k_and_counters() -> None:
    drafter = NgramDrafter(NgramConfig(prompt_lookup_min=1, prompt_lookup_max=3))
    batch = DraftBatch(
        token_ids=[[1, 2, 3, 4, 1, 2], [9, 8, 7], np.array([5, 6, 5, 6, 5]), [1, 2, 1]],
        slot_ids=[0, 1, 2, 3],
        num_computed_tokens=[5, 2, 4, 2],
    )
    prop = drafter.propose(batch, [3, 2, 4, 0])
    assert prop.to_lists() == [[3, 4, 1], [], [6, 5], []]
    assert prop.num_draft_tokens == (3, 0, 2, 0)
    assert prop.draft_token_ids.tolist() == [3, 4, 1, 6, 5]  # ragged, request-major
    assert prop.draft_probs is None
    assert drafter.num_propose_calls == 1 and drafter.num_forward_calls == 0
    empty = drafter.propose(batch, 0)
    assert empty.num_draft_tokens == (0, 0, 0, 0)
    assert drafter.num_propose_calls == 1  # K = 0 step: no drafter work
