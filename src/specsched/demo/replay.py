"""The demo's model check: each arm's speedup predicted again with the acceptance the run's own
requests showed (`planner.replay`), so the verdict can tell a wrong cost model or simulation
from a text sample that accepted differently from the profile's.

Every arm of a replicate decodes the same prompts, so a request's acceptance is counted over
all arms of its replicate (`bench.step_rows.position_counts`, pooled by place in the trial):
the arms that draft more test the later positions. Each position's rate is (accepted + w * p) /
(tested + w), p the profile's rate at the request's context and w = PRIOR_WEIGHT drafts, so a
position no arm tested falls back to the profile's. A replicate whose step logs cannot be read
is left out; a scenario with none gets no replay. No torch here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from specsched.bench.experiment import Experiment, Scenario
from specsched.bench.step_rows import position_counts
from specsched.demo.predict import CACHED_PREFILL_TOKENS
from specsched.planner.predict import Estimate
from specsched.planner.profile import Profile
from specsched.planner.replay import replay_speedups
from specsched.planner.simulate import SimRequest, Workload
from specsched.policy.acceptance_stats import prior_for_context

PRIOR_WEIGHT = 1.0  # drafts' worth of the profile's rate in each position's estimate


def _steps(trial: Mapping[str, Any]) -> list[Any] | None:
    steps = trial.get("extra", {}).get("steps")
    return steps if isinstance(steps, list) else None


def replicate_workload(trials: list[Mapping[str, Any]], scenario: Scenario, profile: Profile,
                       waves: bool) -> Workload | None:
    """One replicate's requests as run (lengths from the first trial) with each request's
    acceptance pooled over the replicate's `trials` (one per arm); None when no trial's step
    log can be read or the trials disagree on the requests."""
    shapes = [(int(r["num_prompt_tokens"]), int(r["num_output_tokens"]))
              for r in trials[0]["requests"]]
    if not shapes or any(len(t["requests"]) != len(shapes) for t in trials):
        return None
    max_k = max(1, profile.grid.ks[-1])
    tested = np.zeros((len(shapes), max_k))  # [requests, positions]
    accepted = np.zeros((len(shapes), max_k))
    read = False
    for t in trials:
        steps = _steps(t)
        counts = None if steps is None else position_counts(
            steps, [int(r["num_output_tokens"]) for r in t["requests"]], max_k)
        if counts is None:
            continue
        read = True
        tested += np.asarray([c[0] for c in counts])
        accepted += np.asarray([c[1] for c in counts])
    if not read:
        return None
    points = [(p.ctx, p.a) for p in profile.acceptance]
    reqs = []
    for i, (prompt, out) in enumerate(shapes):
        prior = prior_for_context(points, prompt, max_k)  # [max_k]
        rates = (accepted[i] + PRIOR_WEIGHT * prior) / (tested[i] + PRIOR_WEIGHT)  # [max_k]
        reqs.append(SimRequest(prompt, out, ((0, tuple(float(x) for x in rates)),)))
    return Workload(tuple(reqs), scenario.concurrency, waves, CACHED_PREFILL_TOKENS)


def replayed(exp: Experiment, profile: Profile, trials: Iterable[Mapping[str, Any]],
             baseline: str, waves: bool) -> dict[tuple[str, str], Estimate]:
    """(scenario, arm) -> the arm's speedup over `baseline` predicted with the run's own
    acceptance (see module doc); scenarios without a readable replicate are absent."""
    by_rep: dict[tuple[str, int], list[Mapping[str, Any]]] = defaultdict(list)
    for t in trials:
        if t.get("type") == "trial" and not t.get("warmup") and not t.get("failed"):
            by_rep[(str(t["scenario"]), int(t["replicate"]))].append(t)
    arms = {a.name: a.policy for a in exp.arms}
    out: dict[tuple[str, str], Estimate] = {}
    for scenario in exp.scenarios:
        reps = [ts for (name, _), ts in sorted(by_rep.items()) if name == scenario.name]
        workloads = [wl for ts in reps
                     if (wl := replicate_workload(ts, scenario, profile, waves)) is not None]
        if not workloads:
            continue
        for arm, est in replay_speedups(profile, workloads, arms, arms[baseline]).items():
            out[(scenario.name, arm)] = est
    return out
