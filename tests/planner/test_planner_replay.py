"""`planner.replay`: a run predicted again with its own requests' acceptance — hand-computed
speedups on a profile whose step costs the fit recovers exactly, the baseline against itself,
and the geometric mean over replicates."""

from __future__ import annotations

import math

import pytest
from planner_tables import table_profile

from specsched.planner.replay import geometric_estimate, replay_speedups
from specsched.planner.simulate import SimRequest, Workload
from specsched.policy import PolicyConfig

# T = 10 ms + 1 ms per row + 2 ms per draft token: K = 0 at B = 1 is 11 ms, K = 2 is 15 ms
PROFILE = table_profile((1, 4), (100, 1000), (0, 1, 2, 3),
                        lambda b, c, k: 10.0 + b + 2.0 * k * b, a=0.5)
NO_SPEC = PolicyConfig.constant(0)


def _wl(a: float, out: int = 10) -> Workload:
    # one request; its prefill (1 token) is priced as a K = 0 decoding row and emits a token
    return Workload((SimRequest(100, out, ((0, (a, a, a)),)),), 1, prefill_tokens=1)


def test_every_draft_accepted_at_k2_is_ten_steps_in_four() -> None:
    # no-spec: 10 steps of 11 ms; K = 2, all accepted: the prefill step, then 3 tokens a step
    # (9 left: 3 steps of 15 ms)
    got = replay_speedups(PROFILE, [_wl(1.0)], {"k2": PolicyConfig.constant(2)}, NO_SPEC)
    assert got["k2"].mean == pytest.approx(110 / (11 + 3 * 15), rel=1e-3)
    assert got["k2"].lo == got["k2"].hi == got["k2"].mean  # one replicate: no interval


def test_no_draft_accepted_costs_the_draft_tokens() -> None:
    got = replay_speedups(PROFILE, [_wl(0.0)], {"k2": PolicyConfig.constant(2)}, NO_SPEC)
    # every step emits one token: 9 after the prefill, K = 2 while 3 or more are left (7
    # steps), then K = 1 (room 1: 13 ms) and K = 0 (room 0: 11 ms)
    assert got["k2"].mean == pytest.approx(110 / (11 + 7 * 15 + 13 + 11), rel=1e-3)


def test_replicates_combine_geometrically_and_the_baseline_ties_itself() -> None:
    arms = {"k2": PolicyConfig.constant(2), "same": NO_SPEC}
    one = [replay_speedups(PROFILE, [_wl(a)], arms, NO_SPEC)["k2"].mean for a in (1.0, 0.0)]
    both = replay_speedups(PROFILE, [_wl(1.0), _wl(0.0)], arms, NO_SPEC)
    assert both["k2"].mean == pytest.approx(math.sqrt(one[0] * one[1]))
    assert both["k2"].lo < both["k2"].mean < both["k2"].hi
    assert both["same"].mean == pytest.approx(1.0) and both["same"].hi == pytest.approx(1.0)


def test_geometric_estimate_and_bad_input() -> None:
    est = geometric_estimate([2.0, 8.0])
    assert est.mean == pytest.approx(4.0) and est.lo < 4.0 < est.hi
    assert math.log(est.hi) - math.log(4.0) == pytest.approx(math.log(4.0) - math.log(est.lo))
    with pytest.raises(ValueError, match="at least one workload"):
        replay_speedups(PROFILE, [], {"k2": NO_SPEC}, NO_SPEC)
