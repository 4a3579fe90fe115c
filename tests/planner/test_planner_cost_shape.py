"""The profile's cost shape: where the engine is not the linear plane fitted to a profile (deep
drafts dearer than a line in K), the adaptive policy's costs are the profile's measured steps, it
drafts the K those steps favour, and what it learns online moves the plane's level, not the
shape; the planner and its workload simulator step the profile's times too (no torch)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from planner_tables import table_profile

from specsched.planner import CostKind, CostModel, fit_cost
from specsched.planner.adaptive_prior import adaptive_prior, fit_profile_cost
from specsched.planner.simulate import SimRequest, Workload, simulate
from specsched.policy import PolicyConfig, PolicyKind, StepOutcome
from specsched.policy.adaptive import AdaptivePolicy
from specsched.policy.batch import RequestOutcome
from specsched.policy.cost import StepCostModel, step_features
from specsched.schedule import Schedule

# seconds per unit (const, rows, ctx_k, drafts, draft_ctx_k, draft_steps, prefill, tile)
PLANE = (0.040, 0.002, 0.005, 0.006, 0.0003, 0.009, 0.0, 0.0)
CONVEX = 0.012  # each step costs (1 + CONVEX * max K^2) x the plane: deep drafts dearer
ACC = 0.93


class Convex:
    """The truth: the plane times 1 + CONVEX·(max K)^2 (a cost a linear model cannot follow)."""

    def features(self, contexts: Any, num_spec_tokens: Any, num_prefill_tokens: int = 0
                 ) -> np.ndarray:
        return step_features(contexts, num_spec_tokens, num_prefill_tokens)

    def predict(self, x: np.ndarray) -> float:
        return float(np.dot(PLANE, x)) * (1.0 + CONVEX * float(x[5]) ** 2)


def truth_ms(b: int, c: int, k: int) -> float:
    return 1000.0 * Convex().predict(step_features([c] * b, [k] * b))


def prior(shaped: bool) -> StepCostModel:
    fit = fit_profile_cost(table_profile((1, 4, 16), (512, 4096), (0, 1, 2, 3, 4, 5), truth_ms,
                                         ACC))
    assert fit.rel_rmse > 0.03  # the setup: the plane misses the truth
    return fit if shaped else dataclasses.replace(fit, shape=None)


def test_at_profiled_points_the_policy_costs_are_the_profile_s_steps() -> None:
    cfg = adaptive_prior(table_profile((1, 4, 16), (512, 4096), (0, 1, 2, 3, 4, 5), truth_ms, ACC))
    policy = AdaptivePolicy(cfg, PolicyConfig.constant(1).build(), per_request=True)
    for b, c in ((1, 512), (4, 512), (16, 4096)):
        base, table, per_step = policy.costs([c] * b)
        uniform = base + table.sum(axis=0) + per_step * np.arange(6)  # [k]
        np.testing.assert_allclose(1000 * uniform, [truth_ms(b, c, k) for k in range(6)],
                                   rtol=1e-9)


def _goodputs(shaped: bool, seeds: range) -> tuple[list[float], float, float]:
    wl = Workload(tuple(SimRequest(512, 32, ((0, (ACC,) * 5),)) for _ in range(8)), 4,
                  prefill_tokens=1)
    statics = [float(np.mean([simulate(wl, PolicyConfig.constant(k).build(),
                                       Convex(), seed=s, noise=0.05).goodput  # type: ignore[arg-type]
                              for s in seeds])) for k in range(6)]

    def mean(prior_model: StepCostModel) -> float:
        cfg = adaptive_prior(table_profile((1, 4, 16), (512, 4096), (0, 1, 2, 3, 4, 5),
                                           truth_ms, ACC))
        cfg = dataclasses.replace(cfg, cost_prior=prior_model)
        pc = PolicyConfig(schedule=Schedule.constant(1), kind=PolicyKind.ADAPTIVE, adaptive=cfg,
                          per_request_k=True)
        return float(np.mean([simulate(wl, pc.build(), Convex(), seed=s,  # type: ignore[arg-type]
                                       noise=0.05).goodput for s in seeds]))

    return statics, mean(prior(True)), mean(prior(False))


def test_the_policy_drafts_the_k_the_profile_s_steps_favour_not_the_plane_s() -> None:
    """B = 4 x ctx 512, acceptance 0.93: the plane through all profiled points makes deep K look
    cheaper than it is; with the profile's shape the policy reaches the best static K."""
    seeds = range(6)
    statics, shaped, plane = _goodputs(True, seeds)
    best = int(np.argmax(statics))
    assert 1 <= best <= 3  # the setup: the truth favours a middle K, not the deepest
    assert shaped >= 0.97 * statics[best]
    assert shaped > 1.02 * plane  # the plane alone drafts deeper and loses


def tilted_ms(b: int, c: int, k: int) -> float:
    """A truth whose B = 4 steps alone add 6 % per draft: a slope the plane through every
    profiled batch size cannot give one of them (the shape holds it as a tilt in K)."""
    plane = 1000.0 * float(np.dot(PLANE, step_features([c] * b, [k] * b)))
    return plane * (1.0 + 0.06 * k) if b == 4 else plane


@pytest.mark.parametrize("level", [0.7, 1.5])
def test_what_it_learns_online_moves_the_level_and_keeps_the_shape(level: float) -> None:
    """Steps that all run `level` x the profile's time (a faster or slower machine): the
    policy's uniform-K step times follow the level and keep the profile's ratios between Ks.
    (Learned on unshaped features, the online plane would take the B = 4 tilt in as its own
    per-draft cost and the shape would then count it twice: K = 5 12-17 % too dear.)"""
    cfg = adaptive_prior(table_profile((1, 4, 16), (512, 4096), (0, 1, 2, 3, 4, 5), tilted_ms,
                                       ACC))
    policy = AdaptivePolicy(cfg, PolicyConfig.constant(1).build(), per_request=True)
    c = 512
    for step in range(150):
        k = step % 6
        outcome = StepOutcome(4, tuple(RequestOutcome(i, c, k, k) for i in range(4)),
                              level * tilted_ms(4, c, k) / 1000.0, k)
        policy.observe(outcome)
    base, table, per_step = policy.costs([c] * 4)
    got = 1000 * (base + table.sum(axis=0) + per_step * np.arange(6))  # [k]
    want = np.array([level * tilted_ms(4, c, k) for k in range(6)])
    np.testing.assert_allclose(got / want, np.full(6, 1.0), rtol=0.03)


def test_the_planner_and_its_simulator_step_the_profile_s_times_at_its_points() -> None:
    """The planner's fitted step time (`CostKind.FIT`) and the workload simulator's are the plane
    in the profile's shape: a profiled point's measured step; between points, nearer the truth
    than the plane alone; the plane's own residuals are still what `plan` reports."""
    profile = table_profile((1, 4, 16), (512, 4096), (0, 1, 2, 3, 4, 5), truth_ms, ACC)
    fit = fit_cost(profile)
    assert fit.rms_rel > 0.03  # the plane's residuals, not the shaped model's (~0)
    model = CostModel.from_profile(profile, CostKind.FIT)
    for b, c, k in ((1, 512, 1), (4, 512, 4), (16, 4096, 5)):
        assert model.step_time_ms(b, c, k).value == pytest.approx(truth_ms(b, c, k), rel=1e-9)
        x = fit.model.features([c] * b, [k] * b)
        assert 1000 * fit.model.predict(x) == pytest.approx(truth_ms(b, c, k), rel=1e-9)
        assert 1000 * fit.model.plane(x) != pytest.approx(truth_ms(b, c, k), rel=1e-3)
    for b, c, k in ((8, 1400, 2), (2, 900, 5), (8, 2048, 4)):
        shaped, plane = model.step_time_ms(b, c, k).value, fit.plane_ms(b, c, k)
        assert abs(shaped / truth_ms(b, c, k) - 1) < abs(plane / truth_ms(b, c, k) - 1)
