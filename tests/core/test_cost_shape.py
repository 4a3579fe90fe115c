"""`CostShape`: measured / fitted step time per profiled (B, context, K), interpolated in
(log B, log context), held outside the profiled points, clipped (no torch)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specsched.policy.cost import StepCostModel
from specsched.policy.cost_shape import MAX_RATIO, CostShape


def _shape() -> CostShape:
    ratio = {(1, 512): 1.0, (4, 512): 1.2, (1, 4096): 0.9, (4, 4096): 1.1}
    points = [(b, c, k, r * (1 + 0.1 * k)) for (b, c), r in ratio.items() for k in (0, 2, 4)]
    shape = CostShape.from_points(points)
    assert shape is not None
    return shape


def test_profiled_points_get_their_own_ratio() -> None:
    shape = _shape()
    np.testing.assert_allclose(shape.ratios(4, 512, 4)[[0, 2, 4]], [1.2, 1.2 * 1.2, 1.2 * 1.4])
    np.testing.assert_allclose(shape.ratios(1, 4096, 4)[[0, 2, 4]], [0.9, 0.9 * 1.2, 0.9 * 1.4])


def test_between_points_it_is_linear_in_log_batch_and_log_context() -> None:
    shape = _shape()
    # B = 2 is halfway between 1 and 4 in log B: the geometric mean of their ratios
    assert shape.ratios(2, 512, 0)[0] == pytest.approx(math.sqrt(1.0 * 1.2))
    mid = shape.ratios(2, round(math.sqrt(512 * 4096)), 0)[0]
    assert mid == pytest.approx((1.0 * 1.2 * 0.9 * 1.1) ** 0.25, rel=1e-3)


def test_outside_the_points_it_holds_the_nearest_and_ks_hold_the_profiled_k_below() -> None:
    shape = _shape()
    np.testing.assert_allclose(shape.ratios(64, 100_000, 4), shape.ratios(4, 4096, 4))
    np.testing.assert_allclose(shape.ratios(1, 1, 0), shape.ratios(1, 512, 0))
    r = shape.ratios(4, 512, 6)  # K = 1, 3 take K = 0, 2's; K = 5, 6 the deepest profiled
    assert r[1] == pytest.approx(r[0]) and r[3] == pytest.approx(r[2])
    assert r[5] == pytest.approx(r[4]) and r[6] == pytest.approx(r[4])


def test_a_missing_point_is_on_the_fit_and_a_wild_one_is_clipped() -> None:
    shape = CostShape.from_points([(1, 512, 0, 1.5), (4, 4096, 0, 10.0)])
    assert shape is not None
    assert shape.ratios(4, 512, 0)[0] == pytest.approx(1.0)  # not profiled
    assert shape.ratios(4, 4096, 0)[0] == pytest.approx(MAX_RATIO)
    assert CostShape.from_points([]) is None


def test_a_malformed_shape_is_refused_and_it_survives_the_cost_model_s_json() -> None:
    with pytest.raises(ValueError, match="increasing"):
        CostShape((4, 1), (512,), (0,), (((0.0,),), ((0.0,),)))
    with pytest.raises(ValueError, match="log_ratio"):
        CostShape((1,), (512,), (0, 1), (((0.0,),),))
    shape = _shape()
    model = StepCostModel((0.01,) * 8, shape=shape)
    body = model.to_json()["shape"]
    assert isinstance(body, dict)
    again = CostShape(tuple(body["batch_sizes"]), tuple(body["contexts"]), tuple(body["ks"]),
                      tuple(tuple(tuple(row) for row in plane) for plane in body["log_ratio"]))
    assert again == shape


def test_drafting_bound_bounds_every_k_vector_with_every_draft_accepted() -> None:
    """`drafting_bound` >= the all-accepted goodput gain of every K vector (brute force)."""
    import itertools

    import numpy as np

    from specsched.policy.optimize import evaluate
    from specsched.policy.step_costs import drafting_bound

    rng = np.random.default_rng(7)
    for _ in range(200):
        n, m = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        per = rng.uniform(0.001, 0.05, size=(n, m)).cumsum(axis=1)  # [n, m] rising in k
        table = np.concatenate([np.zeros((n, 1)), per], axis=1)  # [n, m + 1]
        base, step = float(rng.uniform(0.01, 0.1)), float(rng.uniform(0.0, 0.03))
        tokens = np.tile(np.arange(1.0, m + 2), (n, 1))  # every draft accepted
        plain = evaluate(tokens, base, table, step, np.zeros(n, dtype=np.int64)).goodput
        best = max(evaluate(tokens, base, table, step, np.array(v)).goodput / plain
                   for v in itertools.product(range(m + 1), repeat=n))
        assert drafting_bound((base, table, step)) >= best * (1 - 1e-12)
