"""`HysteresisPolicy` as tables: a sequence of steps (batch size, context) -> the K sequence."""

from __future__ import annotations

import pytest

from specsched.errors import UserError
from specsched.policy import BatchState, PolicyConfig, StepOutcome
from specsched.policy.hysteresis import HysteresisConfig, HysteresisPolicy, edge_distance
from specsched.schedule import INF, parse_schedule

# K=1 below context 1000, K=4 from 1000 (batch 1-2); K=0 / K=2 for batch sizes 3-8.
GRID = parse_schedule([
    [1, 2, 1, 999, 1], [1, 2, 1000, INF, 4],
    [3, 8, 1, 999, 0], [3, 8, 1000, INF, 2],
])
# Context of a single decoding request, step by step: crosses 1000 up, flickers, comes back.
FLICKER = [990, 1001, 995, 1002, 1003, 1004, 1005, 980, 970, 960]
RISE = [900, 1000, 1050, 1200, 1300]

# (contexts, persist_steps, margin) -> K per step (batch size 1)
CASES = [
    # off: the schedule itself
    ((FLICKER, 1, None), [1, 4, 1, 4, 4, 4, 4, 1, 1, 1]),
    ((FLICKER, 1, 0.5), [1, 4, 1, 4, 4, 4, 4, 1, 1, 1]),
    ((FLICKER, 5, 0.0), [1, 4, 1, 4, 4, 4, 4, 1, 1, 1]),
    # persist 3: the flicker at 1001 is ignored; 1002..1004 is the third step above -> K=4;
    # back below 1000 at 980: three steps (980, 970, 960) before K=1 again
    ((FLICKER, 3, None), [1, 1, 1, 1, 1, 4, 4, 4, 4, 1]),
    # margin 0.1 only (persist 0): 1000 -> 1099 is a dead band; 1200 is 20% past the edge
    ((RISE, 0, 0.1), [1, 1, 1, 4, 4]),
    # margin + persist: whichever comes first (persist 2 wins at 1050)
    ((RISE, 2, 0.1), [1, 1, 4, 4, 4]),
    # a big jump switches at once with a margin, even with a long persistence
    (([100, 5000, 5000], 10, 0.2), [1, 4, 4]),
    (([100, 5000, 5000], 10, None), [1, 1, 1]),
]


def run(contexts: list[int], persist: int, margin: float | None, batch: int = 1) -> list[int]:
    policy = HysteresisPolicy(PolicyConfig(schedule=GRID).build(), persist, margin)
    return [policy.decide(BatchState.from_counts([c] * batch, [1] * batch)).step_k
            for c in contexts]


@pytest.mark.parametrize(("steps", "want"), CASES)
def test_hysteresis_table(steps: tuple[list[int], int, float | None], want: list[int]) -> None:
    assert run(*steps) == want


def test_off_is_the_inner_policy_exactly() -> None:
    inner = PolicyConfig(schedule=GRID).build()
    assert HysteresisConfig().wrap(inner) is inner
    assert HysteresisConfig(persist_steps=4, margin=0).wrap(inner) is inner
    wrapped = HysteresisPolicy(PolicyConfig(schedule=GRID).build(), 1, None)
    for computed in ([990], [1001, 5], [50, 60, 70], [5000] * 4, [2000, 10]):
        batch = BatchState.from_counts(computed, [1] * len(computed))
        assert wrapped.decide(batch) == inner.decide(batch)


def test_batch_axis_and_held_route() -> None:
    policy = HysteresisPolicy(PolicyConfig(schedule=GRID).build(), 2, 0.5)
    short = BatchState.from_counts([500, 500], [1, 1])
    assert policy.decide(short).step_k == 1
    # batch 3 enters row 3-8 (K=0): 0% past the edge at 3 -> held, K stays 1, route names the
    # held cell; the prefilling request is capped to 0 as always
    three = BatchState.from_counts([500, 500, 0], [1, 1, 10])
    held = policy.decide(three)
    assert held.step_k == 1 and held.num_spec_tokens == (1, 1, 0)
    assert held.route is not None and tuple(held.route.bucket) == (1, 2, 1, 999)
    assert held.route.batch_size == 3
    assert policy.decide(three).step_k == 0  # second step in row 3-8: adopted
    # from row 3-8 down to row 1-2 at batch 1: (3 - 1) / 3 = 0.67 past the edge -> at once
    assert policy.decide(BatchState.from_counts([500], [1])).step_k == 1
    assert policy.max_k == 4


def test_edge_distance() -> None:
    a = PolicyConfig(schedule=GRID).build().decide(BatchState.from_counts([1100], [1])).route
    assert a is not None
    held = GRID.lookup(1, 500)[1]
    assert edge_distance(a, held) == pytest.approx(0.1)
    b = PolicyConfig(schedule=GRID).build().decide(BatchState.from_counts([900], [1])).route
    assert b is not None
    assert edge_distance(b, GRID.lookup(1, 1000)[1]) == pytest.approx(0.1)


def test_observe_passes_through() -> None:
    seen: list[StepOutcome] = []

    class Inner:
        max_k = 3

        def decide(self, batch: BatchState) -> object:
            raise AssertionError

        def observe(self, outcome: StepOutcome) -> None:
            seen.append(outcome)

    policy = HysteresisPolicy(Inner(), 2)  # type: ignore[arg-type]
    outcome = StepOutcome(1, (), 0.01, 2)
    policy.observe(outcome)
    assert seen == [outcome] and policy.max_k == 3


@pytest.mark.parametrize(
    ("persist", "margin", "match"),
    [(-1, None, "persist_steps"), (0, None, "needs a margin"), (2, -0.1, "margin"),
     (True, None, "persist_steps"), (2, float("nan"), "margin")],
)
def test_bad_config(persist: int, margin: float | None, match: str) -> None:
    with pytest.raises(UserError, match=match):
        HysteresisConfig(persist, margin)
