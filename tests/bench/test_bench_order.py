from __future__ import annotations

from collections import Counter

import pytest
from bench_helpers import make_exp

from specsched.bench.order import arm_orders, plan_trials, williams_square


@pytest.mark.parametrize("n", range(1, 9))
def test_williams_square_balances_positions_and_carryover(n: int) -> None:
    rows = williams_square(n)
    assert len(rows) == (n if n % 2 == 0 else 2 * n)
    for row in rows:
        assert sorted(row) == list(range(n))
    for pos in range(n):
        assert Counter(r[pos] for r in rows) == {a: len(rows) // n for a in range(n)}
    follows = Counter((r[i], r[i + 1]) for r in rows for i in range(n - 1))
    if n > 1:
        assert len(set(follows.values())) == 1 and len(follows) == n * (n - 1)


@pytest.mark.parametrize(("n", "reps"), [(2, 4), (3, 6), (4, 8), (5, 5)])
def test_arm_orders_each_arm_each_position_equally(n: int, reps: int) -> None:
    arms = [f"a{i}" for i in range(n)]
    orders = arm_orders(arms, reps, seed=11)
    for pos in range(n):
        assert Counter(o[pos] for o in orders) == {a: reps // n for a in arms}


def test_plan_has_warmups_before_each_measured_trial_and_unique_keys() -> None:
    exp = make_exp(replicates=2, warmup=2)
    plan = plan_trials(exp)
    assert len(plan) == 2 * 1 * 2 * 3
    assert [p.warmup_index for p in plan[:3]] == [0, 1, None]
    assert len({p.key for p in plan}) == len(plan)
    # every arm of a replicate shares the measured seed (common prompts); replicates differ
    measured = [p for p in plan if not p.warmup]
    assert len({p.seed for p in measured if p.replicate == 0}) == 1
    assert len({p.seed for p in measured}) == 2


def test_a_scenario_with_its_own_replicates_runs_that_many_balanced() -> None:
    two = {"name": "quick", "kind": "batch", "prompt_lens": [10], "output_len": 4}
    many = {**two, "name": "noisy", "replicates": 6}
    exp = make_exp(replicates=2, warmup=0, scenarios=[two, many])
    plan = plan_trials(exp)
    per = Counter((p.scenario, p.arm) for p in plan)
    assert per == {("quick", "a"): 2, ("quick", "b"): 2, ("noisy", "a"): 6, ("noisy", "b"): 6}
    noisy = [p for p in plan if p.scenario == "noisy"]
    for pos in range(2):  # 6 replicates of 2 arms: each arm 3 times at each position
        assert Counter(p.arm for p in noisy if p.position == pos) == {"a": 3, "b": 3}
    # the experiment's own scenarios plan exactly as they did without the longer one
    alone = plan_trials(make_exp(replicates=2, warmup=0, scenarios=[two]))
    assert [(p.arm, p.replicate, p.seed) for p in plan if p.scenario == "quick"] == \
        [(p.arm, p.replicate, p.seed) for p in alone]
    assert len({p.key for p in plan}) == len(plan)
