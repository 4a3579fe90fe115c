"""Predict what a K policy gets on a workload: simulate the schedule step by step.

A steady-batch prediction (goodput at one B and context for the whole run) missed what the demo
measured: a wave shrinks as requests finish, a straggler runs alone at the tail (where the
schedule may route K = 0), requests accept differently. `predict_arms` instead draws the
workload (`workload.draw_workload`: lengths, per-request acceptance around the profile's mean
with its measured spread) and plays it through `simulate.simulate` with the policy of the arm —
closed-loop (`PolicyKind.ADAPTIVE`) arms observe the simulated outcomes — and the step cost model
fitted to the profile (`cost_fit`). Every arm sees the same draws per seed, so speedups are
paired; the interval is a 95% t-interval over seeds (it covers the draws of lengths and
acceptance, not the error of the cost model: `cost_rel_rmse` says how large that is).
No torch here.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from specsched.planner.acceptance_ci import t_quantile
from specsched.planner.adaptive_prior import adaptive_prior
from specsched.planner.cost_fit import CostFit, fit_cost
from specsched.planner.plan import Arm, PlanResult
from specsched.planner.profile import Profile
from specsched.planner.simulate import SimResult, Workload, simulate
from specsched.planner.workload import WorkloadSpec, draw_workload
from specsched.policy import PolicyConfig, PolicyKind
from specsched.schedule import Schedule

DEFAULT_SEEDS: tuple[int, ...] = tuple(range(16))
NO_SPEC = "no-spec"


@dataclass(frozen=True, slots=True)
class Estimate:
    """Mean over seeds and its 95% t-interval."""

    mean: float
    lo: float
    hi: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Estimate:
        m = statistics.fmean(values)
        if len(values) < 2:
            return cls(m, m, m)
        half = -t_quantile(0.025, len(values) - 1) * statistics.stdev(values) / math.sqrt(
            len(values))
        return cls(m, m - half, m + half)

    def to_obj(self) -> list[float]:
        return [round(self.mean, 4), round(self.lo, 4), round(self.hi, 4)]


@dataclass(frozen=True, slots=True)
class WorkloadPrediction:
    """goodput: output tokens / s over the whole run; decode_goodput: tokens after each
    request's first / s of steps with a decoding request (the bench's decode tok/s); speedups
    vs the baseline (no-spec) on the same draws; k_histogram: step K -> steps, all seeds."""

    goodput: Estimate
    decode_goodput: Estimate
    speedup: Estimate
    decode_speedup: Estimate
    mean_steps: float
    k_histogram: dict[int, int] = field(default_factory=dict)
    extrapolation: str = ""  # where the workload leaves the profiled box ('' inside it)
    cost_rel_rmse: float = 0.0

    def to_obj(self) -> dict[str, Any]:
        return {"goodput_tok_s": self.goodput.to_obj(),
                "decode_goodput_tok_s": self.decode_goodput.to_obj(),
                "speedup": self.speedup.to_obj(), "decode_speedup": self.decode_speedup.to_obj(),
                "mean_steps": round(self.mean_steps, 2),
                "k_histogram": {str(k): n for k, n in sorted(self.k_histogram.items())},
                "extrapolation": self.extrapolation or None,
                "cost_rel_rmse": round(self.cost_rel_rmse, 4)}


def _decode_goodput(res: SimResult, wl: Workload) -> float:
    tokens = res.output_tokens - len(wl.requests)  # the prefill step samples each first token
    return tokens / res.decode_seconds if res.decode_seconds > 0 else 0.0


def _outside(profile: Profile, spec: WorkloadSpec, policy: PolicyConfig, fit: CostFit) -> str:
    """Where the workload leaves the profiled box ('' when it does not): batches from 1 (a
    shrinking tail) to the concurrency, contexts from the shortest prompt to the longest prompt +
    output, K up to the policy's largest."""
    lo_ctx = spec.prompt_len.bounds[0]
    hi_ctx = spec.prompt_len.bounds[1] + spec.output_len.bounds[1]
    top_b = min(spec.concurrency, spec.num_requests)
    (b0, b1), (c0, c1) = fit.batch_range, fit.ctx_range
    out = []
    if b0 > 1 or top_b > b1:
        out.append(f"batch 1..{top_b} (profiled {b0}..{b1})")
    if lo_ctx < c0 or hi_ctx > c1:
        out.append(f"contexts {lo_ctx}..{hi_ctx} (profiled {c0}..{c1})")
    if policy.max_k > profile.grid.ks[-1]:
        out.append(f"K up to {policy.max_k} (profiled {profile.grid.ks[-1]})")
    return "; ".join(out)


def _runs(profile: Profile, spec: WorkloadSpec, policy: PolicyConfig, seeds: Sequence[int],
          fit: CostFit, noise: float, quantile: float,
          sample: int | None) -> list[tuple[SimResult, Workload]]:
    out = []
    for seed in seeds:
        wl = draw_workload(spec, profile, seed, quantile, sample)
        out.append((simulate(wl, policy.build(), fit.model, seed=seed, noise=noise), wl))
    return out


def predict_arms(
    profile: Profile,
    workload: WorkloadSpec,
    arms: Mapping[str, PolicyConfig],
    seeds: Sequence[int] = DEFAULT_SEEDS,
    *,
    noise: float = 0.0,
    acceptance_quantile: float = 0.5,
    baseline: PolicyConfig | None = None,
    acceptance_sample: int | None = None,
) -> dict[str, WorkloadPrediction]:
    """Each arm's prediction (see module doc); speedups vs `baseline` (default no-spec).
    `noise`: log-normal sigma of each step's time (0: the cost model's value).
    `acceptance_quantile` of the profile's mean acceptance over the workload's output horizon,
    or with `acceptance_sample` = m of the rate m new requests will pool
    (`acceptance_ci.acceptance_bound`)."""
    if not seeds:
        raise ValueError("need at least one seed")
    fit = fit_cost(profile)
    base = _runs(profile, workload, baseline or PolicyConfig.constant(0), seeds, fit, noise,
                 acceptance_quantile, acceptance_sample)
    out: dict[str, WorkloadPrediction] = {}
    for name, policy in arms.items():
        runs = _runs(profile, workload, policy, seeds, fit, noise, acceptance_quantile,
                     acceptance_sample)
        hist: dict[int, int] = {}
        for res, _ in runs:
            for k, n in res.k_histogram.items():
                hist[k] = hist.get(k, 0) + n
        good = [r.goodput for r, _ in runs]
        dec = [_decode_goodput(r, wl) for r, wl in runs]
        base_good = [r.goodput for r, _ in base]
        base_dec = [_decode_goodput(r, wl) for r, wl in base]
        out[name] = WorkloadPrediction(
            Estimate.of(good), Estimate.of(dec),
            Estimate.of([g / b if b > 0 else 1.0 for g, b in zip(good, base_good, strict=True)]),
            Estimate.of([g / b if b > 0 else 1.0 for g, b in zip(dec, base_dec, strict=True)]),
            statistics.fmean(r.steps for r, _ in runs), hist,
            _outside(profile, workload, policy, fit), fit.rms_rel,
        )
    return out


def plan_arms(profile: Profile, plan: PlanResult,
              batch_only: Schedule | None = None) -> dict[str, PolicyConfig]:
    """The comparison arms of a plan as policies: no-spec, best static K, best batch-only (when
    given), the plan, and the adaptive policy (the plan as its prior schedule, the profile's
    cost model and acceptance as its priors)."""
    k = int(plan.arms[Arm.STATIC].k_cells.flat[0])
    arms = {NO_SPEC: PolicyConfig.constant(0), f"static K={k}": PolicyConfig.constant(k)}
    if batch_only is not None:
        arms["batch-only"] = PolicyConfig(schedule=batch_only)
    arms["plan"] = PolicyConfig(schedule=plan.schedule)
    arms["adaptive"] = PolicyConfig(schedule=plan.schedule, kind=PolicyKind.ADAPTIVE,
                                    adaptive=adaptive_prior(profile))
    return arms
