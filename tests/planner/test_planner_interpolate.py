from __future__ import annotations

import math

import pytest
from planner_tables import table_profile

from specsched.errors import UserError
from specsched.planner import CostKind, CostModel, Extrapolation


def _model() -> CostModel:
    # T = 10 + B + 10 * log2(ctx / 256) + K  at B in {1, 9}, ctx in {256, 4096}
    return CostModel.from_profile(
        table_profile(
            (1, 9), (256, 4096), (0, 2), lambda b, c, k: 10 + b + 10 * math.log2(c / 256) + k
        ),
        CostKind.INTERPOLATE,
    )


def test_exact_at_grid_points_and_bilinear_between() -> None:
    m = _model()
    assert m.step_time_ms(9, 4096, 2).value == pytest.approx(10 + 9 + 40 + 2)
    assert m.step_time_ms(5, 256, 0).value == pytest.approx(15.0)  # linear in batch
    assert m.step_time_ms(1, 1024, 0).value == pytest.approx(31.0)  # linear in log ctx
    look = m.step_time_ms(5, 1024, 2)
    assert look.value == pytest.approx(10 + 5 + 20 + 2) and not look.extrapolated


def test_never_extrapolates_silently() -> None:
    m = _model()
    with pytest.raises(UserError, match=r"batch size 16 is outside the profiled range \[1, 9\]"):
        m.step_time_ms(16, 1024, 0)
    with pytest.raises(UserError, match="context 100000 is outside"):
        m.goodput(1, 100_000, 2)
    clamped = m.step_time_ms(16, 100_000, 0, Extrapolation.CLAMP)
    assert clamped.extrapolated and clamped.value == pytest.approx(10 + 9 + 40)
    with pytest.raises(UserError, match="K=3 was not profiled"):
        m.step_time_ms(1, 256, 3)


def test_acceptance_interpolates_in_log_ctx() -> None:
    from specsched.planner import AcceptancePoint, Profile

    p = table_profile((1,), (256, 4096), (0, 1), lambda b, c, k: 10.0)
    p = Profile(
        p.metadata,
        p.grid,
        p.timings,
        (AcceptancePoint(256, (0.9,), 1), AcceptancePoint(4096, (0.7,), 1)),
    )
    a, out = CostModel.from_profile(p).acceptance(1024)
    assert a == pytest.approx((0.8,)) and not out
