"""Predict a run again, given the acceptance its own requests showed: the cost model and the
workload simulation checked apart from the acceptance sample.

A prediction made before a run (`predict.predict_arms`) misses for two reasons: the profile's
acceptance sample is not the run's text (a few documents each: on the demo's five texts per
scenario the tokens per step of one arm varied 3.1-5.6 between replicates, so the mean of five
is uncertain by ~9 %), and the model — step costs fitted to the profile, the simulated serving
loop, each arm's K policy — may be wrong. `replay_speedups` removes the first: every replicate
is simulated with its own requests (prompt and output lengths as run) and each request's own
acceptance per position as measured (`bench.step_rows`), so what is left of the miss is the
model's. Closed-loop arms observe the simulated outcomes as in `predict`.

Speedup per replicate: the arm's goodput over the baseline's, each the mean over `seeds` of the
simulated acceptance draws; over replicates, their geometric mean (as the bench pairs its
measured ratios) with a 95% t-interval of the logs. No torch here.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

from specsched.planner.cost_fit import fit_cost
from specsched.planner.predict import DEFAULT_SEEDS, Estimate
from specsched.planner.profile import Profile
from specsched.planner.simulate import Workload, simulate
from specsched.policy import PolicyConfig


def geometric_estimate(ratios: Sequence[float]) -> Estimate:
    """Geometric mean of positive ratios and the 95% t-interval of their logs."""
    logs = Estimate.of([math.log(r) for r in ratios])
    return Estimate(math.exp(logs.mean), math.exp(logs.lo), math.exp(logs.hi))


def replay_speedups(profile: Profile, workloads: Sequence[Workload],
                    arms: Mapping[str, PolicyConfig], baseline: PolicyConfig,
                    seeds: Sequence[int] = DEFAULT_SEEDS) -> dict[str, Estimate]:
    """Each arm's speedup over `baseline` on the replicates' `workloads` (see module doc)."""
    if not workloads or not seeds:
        raise ValueError("replay needs at least one workload and one seed")
    model = fit_cost(profile).model

    def goodput(policy: PolicyConfig, wl: Workload) -> float:
        return statistics.fmean(simulate(wl, policy.build(), model, seed=s).goodput
                                for s in seeds)

    base = [goodput(baseline, wl) for wl in workloads]
    out: dict[str, Estimate] = {}
    for name, policy in arms.items():  # the baseline's own arm ties itself: not simulated again
        runs = base if policy == baseline else [goodput(policy, wl) for wl in workloads]
        ratios = [g / b for g, b in zip(runs, base, strict=True) if b > 0]
        if ratios and all(r > 0 for r in ratios):
            out[name] = geometric_estimate(ratios)
    return out
