"""Router: pool, context representative, K, per-request mode."""

from __future__ import annotations

import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specsched.policy.route import (
    CtxAgg,
    PoolKind,
    context_representative,
    route,
    route_per_request,
)
from specsched.schedule import parse_schedule

S = parse_schedule(
    [
        [1, 4, 1, 1024, 1],
        [1, 4, 1025, 4096, 3],
        [1, 4, 4097, 100000, 5],
        [5, 16, 1, 1024, 0],
        [5, 16, 1025, 4096, 2],
        [5, 16, 4097, 100000, 4],
    ]
)


@pytest.mark.parametrize(
    ("ctx", "prompts", "agg", "pool", "ctx_repr", "k"),
    [
        ([100, 100, 100, 8000], None, "mean", PoolKind.DECODE, 2075, 3),
        ([100, 100, 100, 8000], None, "median", PoolKind.DECODE, 100, 1),
        ([100, 100, 100, 8000], None, "max", PoolKind.DECODE, 8000, 5),
        ([100, 101], None, "median", PoolKind.DECODE, 100, 1),  # (100+101)//2
        # the 8000-token request is still prefilling: decode pool is the three short ones
        ([100, 100, 100, 8000], [50, 50, 50, 9000], "max", PoolKind.DECODE, 100, 1),
        # nobody decodes yet: fall back to all requests
        ([10, 20, 5000], [100, 100, 6000], "max", PoolKind.ALL, 5000, 5),
        ([2000] * 6, None, "mean", PoolKind.DECODE, 2000, 2),  # batch 6 -> second row
    ],
)
def test_route_table(
    ctx: list[int], prompts: list[int] | None, agg: str, pool: PoolKind, ctx_repr: int, k: int
) -> None:
    d = route(S, ctx, prompts, agg)
    assert (d.batch_size, d.pool, d.ctx_repr, d.k) == (len(ctx), pool, ctx_repr, k)
    assert d.k == S.k_for(d.batch_size, d.ctx_repr)


def test_per_request() -> None:
    assert route_per_request(S, [100, 2000, 9000]) == [1, 3, 5]
    assert route_per_request(S, [100] * 5 + [9000]) == [0] * 5 + [4]


def test_schedule_policy_routes_and_caps() -> None:
    from specsched.policy import BatchState, SchedulePolicy

    decision = SchedulePolicy(S).decide(BatchState.from_counts([3000, 10], [10, 5000]))
    d = decision.route
    assert d is not None
    assert d.pool is PoolKind.DECODE and d.ctx_repr == 3000 and d.k == 3
    assert decision.num_spec_tokens == (3, 0)  # the prefilling request drafts nothing


def test_errors() -> None:
    with pytest.raises(ValueError):
        route(S, [])
    with pytest.raises(ValueError):
        route(S, [1, 2], [1])
    with pytest.raises(ValueError):
        CtxAgg("mode")


@given(st.lists(st.integers(0, 10**7), min_size=1, max_size=300))
def test_representatives_match_statistics(values: list[int]) -> None:
    assert context_representative(values, "mean") == sum(values) // len(values)
    assert context_representative(values, "median") == int(statistics.median(values) // 1)
    assert context_representative(values, "max") == max(values)
