from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specsched.errors import UserError
from specsched.planner import (
    conditional_from_prefix_rates,
    constant_acceptance_for_length,
    expected_tokens,
    expected_tokens_constant,
    goodput,
)
from specsched.planner.acceptance import check_acceptance


@pytest.mark.parametrize(
    ("a", "k", "expected"),
    [
        ((0.8, 0.5), 0, 1.0),
        ((0.8, 0.5), 1, 1.8),
        ((0.8, 0.5), 2, 1.0 + 0.8 + 0.8 * 0.5),  # 2.2
        ((1.0, 1.0, 1.0), 3, 4.0),
        ((0.0, 1.0), 2, 1.0),  # a rejected first draft stops the chain
        ((0.9, 0.8, 0.7, 0.6), 4, 1 + 0.9 + 0.72 + 0.504 + 0.3024),
    ],
)
def test_expected_tokens_by_hand(a: tuple[float, ...], k: int, expected: float) -> None:
    assert expected_tokens(a, k) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("a", "k", "expected"), [(0.5, 4, 1.9375), (0.8, 2, 2.44), (1.0, 5, 6.0), (0.0, 3, 1.0)]
)
def test_expected_tokens_constant_by_hand(a: float, k: int, expected: float) -> None:
    assert expected_tokens_constant(a, k) == pytest.approx(expected)


@given(st.floats(0.0, 1.0), st.integers(0, 12))
def test_constant_formula_matches_the_sum(a: float, k: int) -> None:
    assert expected_tokens_constant(a, k) == pytest.approx(expected_tokens((a,) * k, k))


@given(st.floats(0.05, 0.99), st.integers(1, 8))
def test_constant_acceptance_for_length_inverts(a: float, k: int) -> None:
    length = expected_tokens_constant(a, k)
    assert constant_acceptance_for_length(length, k) == pytest.approx(a, abs=1e-6)


def test_prefix_rates_to_conditional() -> None:
    # vLLM: P(first 1 accepted)=0.8, P(first 2)=0.4, P(first 3)=0.1
    assert conditional_from_prefix_rates([0.8, 0.4, 0.1]) == pytest.approx((0.8, 0.5, 0.25))
    assert conditional_from_prefix_rates([0.0, 0.0]) == (0.0, 0.0)
    assert conditional_from_prefix_rates([0.5, 0.6]) == pytest.approx((0.5, 1.0))  # noise clipped


def test_goodput() -> None:
    assert goodput(8, 2.0, 40.0) == pytest.approx(400.0)  # 8 x 2 tokens per 40 ms


def test_check_acceptance_rejects() -> None:
    with pytest.raises(UserError, match=r"a\[1\]: acceptance must be in \[0, 1\]"):
        check_acceptance([0.5, 1.5], "a")
    with pytest.raises(UserError):
        check_acceptance([], "a")
