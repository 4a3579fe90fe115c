"""The fit picks the statistic that generated synthetic timings, and refuses to guess on noise."""

from __future__ import annotations

import numpy as np
import pytest

from specsched.errors import UserError
from specsched.microbench.fit import Aggregator, Predictor, VerdictRule, decide, fit_linear
from specsched.microbench.shapes import ShapeGrid, generate_shapes, predictors

GRID = ShapeGrid()
X = predictors(generate_shapes(GRID))


def synthetic(key: str, rel_noise: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    clean = 5.0 + 0.01 * X[key]  # ms: a + b·x
    return clean * (1.0 + rel_noise * rng.standard_normal(len(clean)))


@pytest.mark.parametrize(
    ("key", "expected"),
    [("sum", Aggregator.MEAN), ("batch_max", Aggregator.MAX), ("batch_median", Aggregator.MEDIAN)],
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_noisy_linear_timings_pick_the_generating_statistic(
    key: str, expected: Aggregator, seed: int
) -> None:
    verdict = decide(X, synthetic(key, rel_noise=0.03, seed=seed))
    assert verdict.aggregator is expected, verdict.reason
    assert verdict.best is Predictor(key)
    assert verdict.fits[0].r2 > 0.95
    assert verdict.rmse_ratio >= 1.25
    assert verdict.bootstrap_win >= 0.9


def test_exact_fit_has_unit_r2_and_infinite_ratio() -> None:
    verdict = decide(X, 2.0 + 0.5 * X["sum"])
    assert verdict.aggregator is Aggregator.MEAN
    assert verdict.fits[0].r2 == pytest.approx(1.0)
    assert verdict.rmse_ratio > 1e6
    assert verdict.fits[0].slope == pytest.approx(0.5)
    assert verdict.fits[0].intercept == pytest.approx(2.0)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_pure_noise_is_inconclusive(seed: int) -> None:
    y = 10.0 + np.random.default_rng(seed).standard_normal(len(X["sum"]))
    assert decide(X, y).aggregator is Aggregator.INCONCLUSIVE


def test_constant_time_is_inconclusive() -> None:
    verdict = decide(X, np.full(len(X["sum"]), 7.0))
    assert verdict.aggregator is Aggregator.INCONCLUSIVE
    assert verdict.fits[0].r2 == 0.0


def test_decreasing_time_is_inconclusive() -> None:
    assert decide(X, 100.0 - 0.001 * X["sum"]).aggregator is Aggregator.INCONCLUSIVE


def test_even_mixture_of_sum_and_max_is_inconclusive() -> None:
    # Half the work scales with Σctx and half with B·max: neither single statistic owns it.
    y = 1.0 + 0.5 * X["sum"] / X["sum"].mean() + 0.5 * X["batch_max"] / X["batch_max"].mean()
    verdict = decide(X, y)
    assert verdict.aggregator is Aggregator.INCONCLUSIVE
    assert 0.3 < verdict.joint.sum_share < 0.7


def test_joint_fit_recovers_a_sum_only_kernel() -> None:
    verdict = decide(X, 3.0 + 0.02 * X["sum"])
    assert verdict.joint.sum_share == pytest.approx(1.0, abs=1e-6)
    assert verdict.joint.batch_max_coef == pytest.approx(0.0, abs=1e-9)


def test_heavy_noise_does_not_claim_a_winner() -> None:
    # 60 % relative noise on a Σctx kernel: the rule must not name max or median.
    for seed in range(5):
        verdict = decide(X, synthetic("sum", rel_noise=0.6, seed=seed))
        assert verdict.aggregator in (Aggregator.MEAN, Aggregator.INCONCLUSIVE)


def test_rule_thresholds_are_respected() -> None:
    y = synthetic("sum", rel_noise=0.03, seed=0)
    strict = VerdictRule(min_rmse_ratio=1e9)
    assert decide(X, y, strict).aggregator is Aggregator.INCONCLUSIVE
    assert "fit alike" in decide(X, y, strict).reason


def test_fit_linear_r2_matches_numpy() -> None:
    x = np.arange(10.0)
    y = np.array([1.0, 2.5, 2.9, 4.2, 5.1, 5.8, 7.3, 8.0, 8.7, 10.4])
    fit = fit_linear(Predictor.SUM, x, y)
    assert fit.r2 == pytest.approx(np.corrcoef(x, y)[0, 1] ** 2)


def test_rule_validation_and_too_few_shapes() -> None:
    with pytest.raises(UserError):
        VerdictRule(min_rmse_ratio=0.5)
    with pytest.raises(UserError):
        decide({"sum": [1, 2, 3], "batch_max": [1, 2, 3], "batch_median": [1, 2, 3]}, [1, 2, 3])
