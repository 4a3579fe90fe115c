"""Acceptance per request: mean, spread, CI, the lower confidence bound the planner bets on, and
the profile format that stores them (old profiles still load)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from planner_tables import table_profile

from specsched.errors import UserError
from specsched.planner import (
    AcceptancePoint,
    Arm,
    CostModel,
    PlanConfig,
    Profile,
    goodput_table,
    load_profile,
    make_plan,
    profile_from_obj,
    profile_to_obj,
)
from specsched.planner.acceptance_ci import acceptance_bound, summarize_requests, t_quantile

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "profiles"


@pytest.mark.parametrize(("q", "dof", "exact"), [
    (0.1, 3, -1.638), (0.1, 15, -1.341), (0.025, 5, -2.571), (0.025, 30, -2.042),
    (0.9, 10, 1.372), (0.1, 0, -1.2816),
])
def test_t_quantile(q: float, dof: int, exact: float) -> None:
    assert t_quantile(q, dof) == pytest.approx(exact, abs=0.01)


def test_summarize_requests_mean_spread_ci() -> None:
    drafted = [[10, 10], [10, 10], [10, 10], [5, 0]]  # the last never drafted position 2
    accepted = [[8, 6], [6, 3], [10, 9], [5, 0]]
    p = summarize_requests(512, drafted, accepted, 2)
    # prefix rates (0.8, .6), (0.6, .3), (1.0, .9): mean (0.8, 0.6) -> conditional (0.8, 0.75)
    assert p.a == pytest.approx((0.8, 0.75)) and p.num_requests == 3 and p.n == 35
    np.testing.assert_allclose(p.requests, [(0.8, 0.75), (0.6, 0.5), (1.0, 0.9)])
    assert p.spread == pytest.approx((0.2, np.std([0.75, 0.5, 0.9], ddof=1)), abs=1e-5)
    assert p.ci_lo is not None and p.ci_hi is not None and p.ci_level == 0.95
    assert p.ci_lo[0] <= 0.8 <= p.ci_hi[0] and p.ci_lo[0] >= 0.6 and p.ci_hi[0] <= 1.0
    with pytest.raises(ValueError, match="need >= 2"):
        summarize_requests(512, drafted[:1], accepted[:1], 2)


def test_acceptance_bound_cases() -> None:
    assumed = AcceptancePoint(512, (0.8,), 0)
    assert acceptance_bound(assumed, 0.1) == (0.8,)  # nothing measured: no uncertainty
    pooled = AcceptancePoint(512, (0.8,), 100)  # binomial: se = 0.04, z(0.1) = -1.2816
    assert acceptance_bound(pooled, 0.1)[0] == pytest.approx(0.8 - 1.2816 * 0.04, abs=1e-4)
    reqs = ((0.9,), (0.1,), (0.9,), (0.1,))
    spread = AcceptancePoint(512, (0.5,), 400, 4, requests=reqs)
    se = np.std([0.9, 0.1, 0.9, 0.1], ddof=1) / 2
    assert acceptance_bound(spread, 0.1)[0] == pytest.approx(0.5 + t_quantile(0.1, 3) * se,
                                                             abs=1e-4)
    assert acceptance_bound(spread, 0.5) == (0.5,)


def _uncertain_profile(num_requests: int) -> Profile:
    """T(K=0) = 10 ms, T(K=1) = 14 ms everywhere; acceptance 0.5 on average, requests at 0.9
    and 0.1: K=1 gains 1.5 x 10 / 14 = 7% at the mean."""
    p = table_profile((1, 4), (512, 4096), (0, 1), lambda b, c, k: 10.0 if k == 0 else 14.0)
    reqs = tuple((0.9,) if i % 2 == 0 else (0.1,) for i in range(num_requests))
    acc = tuple(AcceptancePoint(c, (0.5,), 40 * num_requests, num_requests, requests=reqs)
                for c in p.grid.contexts)
    return Profile(p.metadata, p.grid, p.timings, acc)


@pytest.mark.parametrize(("num_requests", "quantile", "k"), [
    (4, 0.5, 1),  # the mean says K=1 gains 7%
    (4, 0.1, 0),  # 4 requests this different: the 90% lower bound (0.12) says it may lose
    (256, 0.1, 1),  # 256 requests pin the mean down: the bound (0.47) still gains
])
def test_lower_confidence_bound_keeps_k0_when_the_gain_is_uncertain(
        num_requests: int, quantile: float, k: int) -> None:
    model = CostModel.from_profile(_uncertain_profile(num_requests), acceptance_quantile=quantile)
    plan = make_plan(goodput_table(model), PlanConfig())
    assert (plan.arms[Arm.PLAN].k_cells == k).all()


def test_profile_roundtrip_with_per_request_fields_and_old_profiles_load() -> None:
    p = summarize_requests(512, [[10, 10], [10, 10]], [[8, 6], [6, 3]], 2)
    base = load_profile(EXAMPLES / "smollm2_cpu_manual.profile.json")  # schema_version 1
    assert base.acceptance and base.acceptance[0].num_requests == 0
    prof = Profile(base.metadata, base.grid, base.timings, (p,))
    obj = json.loads(json.dumps(profile_to_obj(prof)))
    assert obj["schema_version"] == 2 and obj["acceptance"][0]["num_requests"] == 2
    assert profile_from_obj(obj).acceptance[0] == p
    obj["acceptance"][0]["requests"][1] = [0.5]
    with pytest.raises(UserError, match=r"requests\[1\] needs 2 rates") as err:
        profile_from_obj(obj)
    assert "\n" not in str(err.value)
    obj["acceptance"][0]["requests"] = []
    obj["acceptance"][0]["spread"] = [0.1, 1.5]
    with pytest.raises(UserError, match=r"acceptance\[0\].spread\[1\]"):
        profile_from_obj(obj)
