"""The demo's "predicted" column: each arm's speedup on each scenario's workload, simulated step
by step (`planner.predict_arms` over `planner.simulate`) with the profile's fitted step cost
model and per-request acceptance drawn around the profile's measured mean and spread — the same
number of requests, concurrency, prompt lengths, refill (or wave) as the experiment, batches that
shrink and refill, each arm's own K policy (closed-loop arms observe the simulated outcomes)."""

from __future__ import annotations

from specsched.bench.experiment import Experiment, Scenario
from specsched.bench.workload import prompt_len_range
from specsched.planner import Profile
from specsched.planner.predict import WorkloadPrediction, predict_arms
from specsched.planner.workload import Arrival, DistKind, LengthDist, WorkloadSpec

# the ends of the 95% interval of the profile's mean acceptance: the prediction band
BAND_QUANTILES = (0.025, 0.975)
CACHED_PREFILL_TOKENS = 16  # the engine backend prefills untimed; a trial recomputes ~a block


def scenario_spec(scenario: Scenario, waves: bool) -> WorkloadSpec:
    """The experiment scenario as a workload description."""
    bounds = prompt_len_range(scenario)
    if bounds is not None:
        prompt = LengthDist(DistKind.UNIFORM, bounds)
    else:
        total = (sum(scenario.prompt_lens) // len(scenario.prompt_lens)
                 if scenario.prompt_lens else scenario.prefix_len + scenario.suffix_len)
        prompt = LengthDist(DistKind.FIXED, (total,))
    return WorkloadSpec(
        num_requests=scenario.num_requests,
        concurrency=scenario.concurrency,
        prompt_len=prompt,
        output_len=LengthDist(DistKind.FIXED, (scenario.output_len,)),
        arrival=Arrival.WAVES if waves else Arrival.CLOSED_LOOP,
        prefill_tokens=CACHED_PREFILL_TOKENS,
    )


def predicted(exp: Experiment, profile: Profile, baseline: str, waves: bool,
              acceptance_quantile: float = 0.5) -> dict[tuple[str, str], WorkloadPrediction]:
    """(scenario, arm) -> the arm's predicted goodput and speedup over the baseline arm.
    `acceptance_quantile`: where in the sampling distribution of the profile's mean acceptance
    to predict (0.5: the mean; 0.025 / 0.975: the ends of its 95% interval, the band the
    profile's own acceptance sample allows)."""
    out: dict[tuple[str, str], WorkloadPrediction] = {}
    arms = {a.name: a.policy for a in exp.arms}
    for scenario in exp.scenarios:
        preds = predict_arms(profile, scenario_spec(scenario, waves), arms,
                             baseline=arms[baseline], acceptance_quantile=acceptance_quantile)
        for name, pred in preds.items():
            out[(scenario.name, name)] = pred
    return out
