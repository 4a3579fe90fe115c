"""Planner math on hand-computed tables."""

from __future__ import annotations

import math

import numpy as np
import pytest
from planner_tables import table_profile

from specsched.errors import UserError
from specsched.planner import Arm, CostKind, CostModel, PlanConfig, goodput_table, make_plan
from specsched.schedule import INF

# Acceptance 0.5 at every position: E[tokens | K=4] = 1 + .5 + .25 + .125 + .0625 = 1.9375.
E4 = 1.9375


def _plan(profile, **cfg):  # type: ignore[no-untyped-def]
    # hand tables test the planning math: exact step times, read by interpolation
    model = CostModel.from_profile(profile, CostKind.INTERPOLATE)
    return make_plan(goodput_table(model), PlanConfig(**cfg))


def test_batch_only_and_2d_must_differ() -> None:
    # T(K=0) = 10 ms everywhere. T(K=4) = 20 ms at ctx 512, 15 ms at ctx 8192 (for both batches).
    # Speedup of K=4: short 1.9375 x 10/20 = 0.96875 (K=0 wins), long 1.9375 x 10/15 = 1.2917.
    p = table_profile(
        (1, 8),
        (512, 8192),
        (0, 4),
        lambda b, c, k: 10.0 if k == 0 else (20.0 if c == 512 else 15.0),
    )
    r = _plan(p, floor=0.0)  # unconstrained (the floor is tested below)
    short, long_ = E4 * 10 / 20, E4 * 10 / 15
    np.testing.assert_array_equal(r.arms[Arm.ORACLE].k_cells, [[0, 4], [0, 4]])
    np.testing.assert_array_equal(r.arms[Arm.PLAN].k_cells, [[0, 4], [0, 4]])
    # batch-only: one K per row; mean relative goodput K=0: (1 + 1/1.2917)/2 = 0.887,
    # K=4: (0.96875 + 1)/2 = 0.984 -> K=4 for both rows (merged into one range).
    np.testing.assert_array_equal(r.arms[Arm.BATCH_ONLY].k_cells, [[4, 4], [4, 4]])
    assert r.arms[Arm.PLAN].geomean_speedup == pytest.approx(math.sqrt(long_))
    assert r.arms[Arm.BATCH_ONLY].geomean_speedup == pytest.approx(math.sqrt(short * long_))
    assert r.arms[Arm.STATIC].geomean_speedup == pytest.approx(math.sqrt(short * long_))
    assert r.arms[Arm.PLAN].mean_of_oracle == pytest.approx(1.0)
    assert r.arms[Arm.BATCH_ONLY].mean_of_oracle == pytest.approx((short / 1 + 1) / 2)
    # The schedule: context boundary at the geometric midpoint isqrt(512 x 8192) = 2048.
    assert r.schedule.entries() == [[1, 8, 1, 2048, 0], [1, 8, 2049, INF, 4]]
    assert r.schedule.k_for(1, 512) == 0 and r.schedule.k_for(8, 8192) == 4
    assert r.schedule.k_for(100, 10**6) == 4
    b = _plan(p, batch_only=True, max_ctx_ranges=1, floor=0.0)
    assert b.schedule.entries(3) == [[1, 8, 4]]


def test_the_floor_forbids_a_k_predicted_to_lose_in_any_cell_of_its_range() -> None:
    """Batch-only with one K per batch range cannot take K = 4 (x0.969 at ctx 512) for its gain at
    8192 under the default floor 0.98; the 2-D plan, which separates the contexts, is unchanged."""
    p = table_profile(
        (1, 8),
        (512, 8192),
        (0, 4),
        lambda b, c, k: 10.0 if k == 0 else (20.0 if c == 512 else 15.0),
    )
    r = _plan(p)
    assert r.config.floor == 0.98
    np.testing.assert_array_equal(r.arms[Arm.PLAN].k_cells, [[0, 4], [0, 4]])
    np.testing.assert_array_equal(r.arms[Arm.BATCH_ONLY].k_cells, [[0, 0], [0, 0]])
    np.testing.assert_array_equal(r.arms[Arm.STATIC].k_cells, [[0, 0], [0, 0]])
    for arm in (Arm.PLAN, Arm.BATCH_ONLY, Arm.STATIC):
        assert r.arms[arm].speedup.min() >= 0.98
    assert _plan(p, batch_only=True, max_ctx_ranges=1).schedule.entries(3) == [[1, 8, 0]]
    # a floor the short cell clears (0.96875 >= 0.96): K = 4 again
    assert _plan(p, batch_only=True, max_ctx_ranges=1, floor=0.96).schedule.entries(3) == [
        [1, 8, 4]]
    with pytest.raises(UserError, match="--floor"):
        PlanConfig(floor=1.5)


def test_batch_only_and_2d_must_be_identical() -> None:
    # T independent of ctx: K=4 is best at B=1 (T4 = 12 ms: 1.9375 x 10/12 = 1.61), K=0 at B=8
    # (T4 = 25 ms: 0.775). Best K never depends on context -> the 2-D plan has one context range.
    p = table_profile(
        (1, 8), (512, 8192), (0, 4), lambda b, c, k: 10.0 if k == 0 else (12.0 if b == 1 else 25.0)
    )
    two_d, batch = _plan(p, floor=0.0), _plan(p, batch_only=True, floor=0.0)
    assert two_d.schedule.entries(3) == batch.schedule.entries(3) == [[1, 4, 4], [5, 8, 0]]
    assert two_d.schedule.is_batch_only
    for arm in Arm:
        np.testing.assert_array_equal(two_d.arms[arm].k_cells, batch.arms[arm].k_cells)
    assert two_d.arms[Arm.PLAN].geomean_speedup == pytest.approx(math.sqrt(E4 * 10 / 12))
    # Best static K: K=0 scores (1/1.6146 + 1)/2 = 0.810, K=4 (1 + 0.775)/2 = 0.8875 -> K=4.
    np.testing.assert_array_equal(two_d.arms[Arm.STATIC].k_cells, [[4, 4], [4, 4]])


def test_min_gain_keeps_k0_below_the_margin() -> None:
    p = table_profile(
        (1, 8),
        (512, 8192),
        (0, 4),
        lambda b, c, k: 10.0 if k == 0 else (20.0 if c == 512 else 15.0),
    )
    assert _plan(p, min_gain=0.25).schedule.k_for(1, 8192) == 4  # gain 29% > 25%
    r = _plan(p, min_gain=0.30)  # 29% < 30%: stay at K=0
    assert r.schedule.k_values == (0,)
    np.testing.assert_array_equal(r.arms[Arm.ORACLE].k_cells, [[0, 0], [0, 0]])


def test_max_k_limits_choices() -> None:
    p = table_profile((1,), (512,), (0, 2, 4), lambda b, c, k: 10.0 + k)
    # E2 = 1.75 -> 17.5/12 = 1.458; E4 = 1.9375 -> 19.375/14 = 1.384: K=2 wins anyway
    assert _plan(p).schedule.k_for(1, 512) == 2
    assert _plan(p, max_k=0).schedule.k_values == (0,)


def test_ranges_respect_limits() -> None:
    # K* rises with batch and context: a 4 x 4 staircase
    p = table_profile(
        (1, 2, 4, 8),
        (256, 1024, 4096, 16384),
        (0, 1, 2, 3, 4),
        lambda b, c, k: 10.0 + k * 40.0 / (b * c / 256) ** 0.5,
        a=0.8,
    )
    full = _plan(p)
    tight = _plan(p, max_batch_ranges=2, max_ctx_ranges=2)
    assert len(tight.schedule.batch_ranges) <= 2 and len(tight.schedule.ctx_ranges) <= 2
    assert tight.arms[Arm.PLAN].mean_of_oracle <= full.arms[Arm.PLAN].mean_of_oracle + 1e-12
    assert full.arms[Arm.PLAN].mean_of_oracle >= full.arms[Arm.BATCH_ONLY].mean_of_oracle
    assert full.arms[Arm.BATCH_ONLY].mean_of_oracle >= full.arms[Arm.STATIC].mean_of_oracle


def test_cells_between_profile_points_are_interpolated() -> None:
    p = table_profile(
        (1, 8),
        (512, 8192),
        (0, 4),
        lambda b, c, k: 10.0 if k == 0 else (20.0 if c == 512 else 15.0),
    )
    t = goodput_table(CostModel.from_profile(p, CostKind.INTERPOLATE), (1, 4, 8), (512, 2048, 8192))
    # ctx 2048 is halfway in log space: T4 = 17.5 ms
    assert t.goodput[0, 1, 1] == pytest.approx(1 * E4 * 1000 / 17.5)
    assert not t.extrapolated.any()
