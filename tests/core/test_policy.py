"""The K-policy room as a table: (batch state -> K per request, step K), no model, no torch."""

from __future__ import annotations

import pytest

from specsched.policy import (
    BatchState,
    CtxAgg,
    PolicyConfig,
    SchedulePolicy,
    StepOutcome,
    capped,
    draft_room,
)
from specsched.schedule import Schedule, parse_schedule

GRID = parse_schedule([
    [1, 2, 1, 999, 1], [1, 2, 1000, 100000, 4],
    [3, 8, 1, 999, 0], [3, 8, 1000, 100000, 2],
])

# (computed, prompt, room, agg, per_request) -> (num_spec_tokens, step_k)
CASES = [
    # batch 1, short context: K=1; long: K=4
    (([500], [10], None, "mean", False), ((1,), 1)),
    (([5000], [10], None, "mean", False), ((4,), 4)),
    # batch 2 mixes contexts: mean 2750 -> K=4 for both; max the same; median floors the mean
    (([500, 5000], [10, 10], None, "mean", False), ((4, 4), 4)),
    (([500, 1400], [10, 10], None, "median", False), ((1, 1), 1)),  # (500+1400)//2 = 950
    # the prefilling request is out of the pool and drafts nothing
    (([500, 3], [10, 5000], None, "mean", False), ((1, 0), 1)),
    # nobody decodes: pool = everyone, K routed, every request capped to 0
    (([3, 4], [10, 10], None, "max", False), ((0, 0), 1)),
    # room caps: K=4 routed, one request has room for 2, one for none
    (([5000, 5000], [10, 10], (2, 0), "mean", False), ((2, 0), 4)),
    # batch 3 (second row): short -> 0, long -> 2
    (([500, 500, 500], [1, 1, 1], None, "mean", False), ((0, 0, 0), 0)),
    (([5000, 5000, 500], [1, 1, 1], None, "mean", False), ((2, 2, 2), 2)),
    # per request: each its own column of the batch-size row; step K = largest decoding K
    (([500, 5000, 3], [10, 10, 50], None, "mean", True), ((0, 2, 0), 2)),
    (([500, 5000], [10, 10], (9, 1), "mean", True), ((1, 1), 4)),
]


@pytest.mark.parametrize(("batch", "want"), CASES)
def test_schedule_policy_table(
    batch: tuple[list[int], list[int], tuple[int, ...] | None, str, bool],
    want: tuple[tuple[int, ...], int],
) -> None:
    computed, prompt, room, agg, per_request = batch
    policy = PolicyConfig(schedule=GRID, ctx_agg=CtxAgg(agg), per_request_k=per_request).build()
    decision = policy.decide(BatchState.from_counts(computed, prompt, room))
    assert (decision.num_spec_tokens, decision.step_k) == want
    assert (decision.route is None) == per_request


def test_constant_policy_and_observe_changes_nothing() -> None:
    policy = PolicyConfig.constant(3).build()
    batch = BatchState.from_counts([100] * 40, [1] * 40)
    before = policy.decide(batch)
    policy.observe(StepOutcome(batch_size=40, requests=(), step_time_s=0.1, step_k=3))
    assert policy.decide(batch) == before and before.num_spec_tokens == (3,) * 40
    assert policy.max_k == 3 and isinstance(policy, SchedulePolicy)


def test_caps_are_pure_functions() -> None:
    assert draft_room(max_model_len=100, num_tokens=95, max_tokens=50, num_output_tokens=10) == 4
    assert draft_room(100, 20, 12, 10) == 1  # max_tokens binds: 2 more outputs, 1 draft
    batch = BatchState.from_counts([10, 10, 2], [5, 5, 5], room=(3, -4, 9))
    assert capped([5, 5, 5], batch) == (3, 0, 0)  # room; negative room; prefilling


def test_batch_state_validates_columns() -> None:
    with pytest.raises(ValueError, match="at least one"):
        BatchState.from_counts([])
    with pytest.raises(ValueError, match="num_prompt_tokens"):
        BatchState((1, 2), (1,))
    assert BatchState.from_counts([3, 4]).ids == (0, 1)


def test_schedule_constant_is_the_one_static_builder() -> None:
    s = Schedule.constant(2)
    assert s.entries(3) == [[1, 1, 2]] and s.k_for(10**6, 10**9) == 2
    with pytest.raises(ValueError):
        Schedule.constant(-1)
