"""The step cost model fitted to a profile: known coefficients recovered, residuals reported,
extrapolation flagged, a poor fit said loudly (library and `specsched plan`)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from planner_tables import table_profile

from specsched.cli import main
from specsched.errors import UserError
from specsched.planner import (
    CostKind,
    CostModel,
    Extrapolation,
    PlanConfig,
    fit_cost,
    goodput_table,
    make_plan,
    save_profile,
)
from specsched.planner.plan_json import plan_to_obj
from specsched.policy.cost import CTX_UNIT, FEATURES

# seconds per unit: const, rows, ctx_k (per 1k context tokens), drafts, draft_ctx_k, draft_steps,
# prefill, tile_ctx_k
THETA = (0.020, 0.002, 0.004, 0.003, 0.0015, 0.010, 0.0, 0.0)
TILE = 0.003  # seconds per 1k context tokens per extra attention pass


def linear_ms(b: int, c: int, k: int) -> float:
    x = (1.0, b, b * c / CTX_UNIT, b * k, b * k * c / CTX_UNIT, float(k), 0.0, 0.0)
    return 1000.0 * float(np.dot(THETA, x))


def tiled_ms(b: int, c: int, k: int, q_tile: int = 5) -> float:
    """The linear cost plus an attention pass per context token once K + 1 > q_tile."""
    return linear_ms(b, c, k) + 1000.0 * TILE * b * c / CTX_UNIT * (-(-(k + 1) // q_tile) - 1)


def linear_profile(outlier: float = 1.0):  # type: ignore[no-untyped-def]
    def t(b: int, c: int, k: int) -> float:
        return linear_ms(b, c, k) * (outlier if (b, c, k) == (16, 4096, 3) else 1.0)

    return table_profile((1, 4, 16), (512, 1024, 4096), (0, 1, 2, 3), t, 0.8)


def test_fit_recovers_known_coefficients() -> None:
    fit = fit_cost(linear_profile())
    assert fit.model.coef == pytest.approx(THETA, rel=1e-3, abs=1e-6)
    assert fit.rms_rel < 1e-4 and fit.max_rel < 1e-4 and not fit.is_poor
    assert len(fit.residuals) == 36 and fit.warning() is None
    assert fit.step_ms(8, 2048, 2) == pytest.approx(linear_ms(8, 2048, 2), rel=1e-4)
    obj = fit.to_obj()
    assert obj["features"] == list(FEATURES) and len(obj["residuals"]) == 36


def test_a_tile_cliff_is_found_in_the_data_or_taken_from_the_engine() -> None:
    ks = (0, 1, 2, 3, 4, 5)
    cliff = table_profile((1, 4, 16), (512, 1024, 4096), ks, tiled_ms, 0.8)
    found = fit_cost(cliff)  # no engine report: the data shows the step at K = 5
    assert found.model.q_tile == 5 and found.rms_rel < 1e-3
    assert found.model.coef[7] == pytest.approx(TILE, rel=1e-2)
    assert "tile pass more from K=5" in found.summary() and found.to_obj()["q_tile"] == 5
    plain = fit_cost(table_profile((1, 4, 16), (512, 1024, 4096), ks, linear_ms, 0.8))
    assert plain.model.q_tile is None  # a straight line gets no tile term
    rng = np.random.default_rng(0)
    noise = {(b, c, k): float(rng.normal(1.0, 0.03)) for b in (1, 4, 16)
             for c in (512, 1024, 4096) for k in ks}
    noisy = fit_cost(table_profile((1, 4, 16), (512, 1024, 4096), ks,
                                   lambda b, c, k: linear_ms(b, c, k) * noise[(b, c, k)], 0.8))
    assert noisy.model.q_tile is None  # 3 % noise is not a cliff
    # the engine's report wins over the data: the term is fitted at its tile size
    told = dataclasses.replace(cliff, metadata=dataclasses.replace(cliff.metadata,
                                                                   attention_q_tile=5))
    assert fit_cost(told).model.q_tile == 5
    # where the profiled Ks never reach the tile, the term stays zero
    short = table_profile((1, 4), (512, 4096), (0, 1, 2), tiled_ms, 0.8)
    short = dataclasses.replace(short, metadata=dataclasses.replace(short.metadata,
                                                                    attention_q_tile=5))
    assert fit_cost(short).model.coef[7] == pytest.approx(0.0, abs=1e-9)
    # without the term the same cliff is a residual of the linear model at K = 5
    linear_only = fit_cost(dataclasses.replace(cliff, metadata=dataclasses.replace(
        cliff.metadata, attention_q_tile=99)))
    assert linear_only.max_rel > 0.02


def test_planner_uses_the_fit_and_flags_extrapolation() -> None:
    model = CostModel.from_profile(linear_profile())
    assert model.kind is CostKind.FIT
    between = model.step_time_ms(8, 2048, 2)  # inside the box, off the grid: the model's value
    assert between.value == pytest.approx(linear_ms(8, 2048, 2), rel=1e-4)
    assert not between.extrapolated
    with pytest.raises(UserError, match="batch size 64 is outside the profiled range"):
        model.step_time_ms(64, 2048, 2)
    beyond = model.step_time_ms(64, 8192, 2, Extrapolation.CLAMP)  # the model, not the edge
    assert beyond.extrapolated and beyond.value == pytest.approx(linear_ms(64, 8192, 2), rel=1e-3)
    table = goodput_table(model, (1, 16, 64), (512, 8192), extrapolation=Extrapolation.CLAMP)
    np.testing.assert_array_equal(table.extrapolated, [[False, True], [False, True],
                                                       [True, True]])
    obj = plan_to_obj(make_plan(table, PlanConfig()), "toy")["specsched_plan"]
    assert obj["extrapolated_cells"][2] == [True, True]
    assert obj["cost_model"]["kind"] == "fit" and obj["cost_model"]["rms_rel_residual"] < 1e-3
    assert obj["acceptance"]["quantile"] == 0.5


def test_a_poor_fit_is_reported_and_interpolation_is_the_fallback(tmp_path: Path,
                                                                  capsys) -> None:  # type: ignore[no-untyped-def]
    profile = linear_profile(outlier=3.0)  # one point 3x off the linear model
    fit = fit_cost(profile)
    assert fit.is_poor and fit.rms_rel > 0.10
    assert (fit.worst.batch_size, fit.worst.ctx, fit.worst.k) == (16, 4096, 3)
    warning = fit.warning()
    assert warning is not None and "--cost-model interpolate" in warning
    interp = CostModel.from_profile(profile, CostKind.INTERPOLATE)
    assert interp.step_time_ms(16, 4096, 3).value == pytest.approx(3 * linear_ms(16, 4096, 3))
    path = tmp_path / "p.json"
    save_profile(profile, path)
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "WARNING: the fitted step cost model misses the profile" in out
    assert main(["plan", str(path), "--cost-model", "interpolate", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)["specsched_plan"]["cost_model"]
    assert obj["kind"] == "interpolate" and obj["poor_fit"] is True
    worst = max(obj["residuals"], key=lambda r: abs(r["rel"]))
    assert (worst["batch_size"], worst["ctx"], worst["k"]) == (16, 4096, 3)
