"""Before anything runs: which arms are the same configuration on each scenario, and where K moves.

Model (stated assumption): requests run in waves of B = min(concurrency, num_requests) in
submission order (the last wave may be smaller), every request of a wave advancing together. At
generated-token index t, request i has num_computed_tokens = num_prompt_tokens_i + t. The
arm's K policy (`specsched.policy`, asked with that batch) gives K at every t of the output.

Every context aggregate the router offers (mean, median, max, each floored) shifts by exactly t
when every context grows by t, so the representative at t is ctx_repr(0) + t and K only changes
where that crosses a context-range lower bound: the K function is stored run-length encoded.
Arms with the same drafter, the same options and the same K function at every token of every wave
are *controls* on the scenario (also on the smaller batches a wave shrinks to as its requests
finish; an adaptive arm's K depends on what it observes: it is never a control of another arm, and
its K values are shown as the range it may choose): the same configuration, their measured
difference is noise. On the engine backend an arm with K = 0 at every token is no-spec whatever its
drafter. No torch here.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from specsched.bench.experiment import Arm, BackendKind, DrafterChoice, Experiment, Scenario
from specsched.bench.workload import request_shapes
from specsched.policy import BatchState, KDecision, KPolicy

# [(t_start, K per request)] with consecutive entries distinct: K during tokens [t_start, next).
KRuns = tuple[tuple[int, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class Crossing:
    """K of `arm` changes at generated-token index `token` (context `ctx`) of wave `wave`."""

    arm: str
    token: int
    ctx: int
    from_k: int
    to_k: int
    wave: int = 0
    request: int | None = None  # per-request-K arms: the request (index in its wave) that moved

    def to_json(self) -> dict[str, Any]:
        return {"arm": self.arm, "token": self.token, "ctx": self.ctx, "from_k": self.from_k,
                "to_k": self.to_k, "wave": self.wave, "request": self.request}


@dataclass(frozen=True, slots=True)
class ScenarioDryRun:
    name: str
    batch_size: int
    num_waves: int
    controls: tuple[tuple[str, ...], ...]  # groups of >= 2 arms, in arm order
    crossings: tuple[Crossing, ...]
    k_values: dict[str, tuple[int, ...]]

    @property
    def all_controls(self) -> bool:
        """True when there are >= 2 arms and they are all one configuration here."""
        n = len(self.k_values)
        return n >= 2 and any(len(g) == n for g in self.controls)

    def control_group_of(self, arm: str) -> tuple[str, ...]:
        for group in self.controls:
            if arm in group:
                return group
        return (arm,)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "batch_size": self.batch_size,
            "num_waves": self.num_waves,
            "controls": [list(g) for g in self.controls],
            "crossings": [c.to_json() for c in self.crossings],
            "k_values": {arm: list(ks) for arm, ks in self.k_values.items()},
        }


@dataclass(frozen=True, slots=True)
class DryRun:
    scenarios: tuple[ScenarioDryRun, ...]
    warnings: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"scenarios": [s.to_json() for s in self.scenarios], "warnings": list(self.warnings)}

    def scenario(self, name: str) -> ScenarioDryRun:
        for s in self.scenarios:
            if s.name == name:
                return s
        raise KeyError(name)


def _decide(policy: KPolicy, num_prompt_tokens: Sequence[int], t: int) -> KDecision:
    """The policy's K for a wave at generated-token index t (every request decoding)."""
    return policy.decide(BatchState.from_counts([p + t for p in num_prompt_tokens],
                                                num_prompt_tokens))


def wave_k_runs(arm: Arm, num_prompt_tokens: Sequence[int], output_len: int) -> KRuns:
    """K per request over generated-token index 0..output_len-1 for one wave, run-length encoded."""
    policy = arm.policy.build()
    first = _decide(policy, num_prompt_tokens, 0)
    # [B] contexts at t = 0 whose column decides K: the representative, or each request's own.
    starts = list(num_prompt_tokens) if first.route is None else [first.route.ctx_repr]
    los = [lo for lo, _ in arm.policy.schedule.ctx_ranges]
    change_points = {0}
    for c in set(starts):
        # lower bounds in (c, c + output_len - 1] are crossed at t = lo - c
        for lo in los[bisect_right(los, c):]:
            if lo - c >= output_len:
                break
            change_points.add(lo - c)
    runs: list[tuple[int, tuple[int, ...]]] = []
    for t in sorted(change_points):
        ks = _decide(policy, num_prompt_tokens, t).num_spec_tokens
        if not runs or runs[-1][1] != ks:
            runs.append((t, ks))
    return tuple(runs)


def scenario_waves(scenario: Scenario, seed: int) -> list[list[int]]:
    """num_prompt_tokens per request, grouped into waves of the scenario's batch size."""
    lens = [s.num_prompt_tokens for s in request_shapes(scenario, seed)]
    b = scenario.batch_size
    return [lens[i : i + b] for i in range(0, len(lens), b)]


def _crossings(arm: Arm, wave: int, lens: Sequence[int], runs: KRuns) -> list[Crossing]:
    out: list[Crossing] = []
    first = _decide(arm.policy.build(), lens, 0).route
    ctx0 = None if first is None else first.ctx_repr
    for (_, prev), (t, cur) in itertools.pairwise(runs):
        if ctx0 is not None:
            out.append(Crossing(arm.name, t, ctx0 + t, prev[0], cur[0], wave))
            continue
        for i, (a, b) in enumerate(zip(prev, cur)):
            if a != b:
                out.append(Crossing(arm.name, t, lens[i] + t, a, b, wave, request=i))
    return out


def _config_key(exp: Experiment, arm: Arm, per_wave: list[KRuns]) -> tuple[object, ...]:
    """What makes two arms the same configuration on a scenario. On the reference engine an
    arm whose K is 0 at every token never drafts (a K = 0 step builds no draft batch, and the
    drafter's options only matter to drafting), so it is no-spec whatever its drafter; on a
    server the drafter may still change the engine (other kernels, graphs, scheduling)."""
    never_drafts = all(k == 0 for runs in per_wave for _, ks in runs for k in ks)
    if never_drafts and exp.backend == BackendKind.ENGINE:
        return (DrafterChoice.NONE, (), tuple(per_wave))
    return (arm.drafter, arm.options, tuple(per_wave))


def classify_scenario(exp: Experiment, scenario: Scenario) -> ScenarioDryRun:
    """Controls, crossings and distinct K per arm on one scenario."""
    waves = scenario_waves(scenario, exp.seed)
    groups: dict[Any, list[str]] = {}
    crossings: list[Crossing] = []
    k_values: dict[str, tuple[int, ...]] = {}
    for arm in exp.arms:
        if arm.policy.is_adaptive:  # K depends on what it observes: never a control, no plan
            groups[("adaptive", arm.name)] = [arm.name]
            k_values[arm.name] = tuple(range(arm.policy.max_k + 1))
            continue
        per_wave = [wave_k_runs(arm, lens, scenario.output_len) for lens in waves]
        # with speculation requests of one wave finish at different steps (their acceptance
        # differs): the batch passes through every smaller size, so arms that draft are controls
        # only if they also agree on each wave's shrunken batches (the first b requests, b < B).
        # Without drafting, equal output lengths finish together: the batch never shrinks.
        drafts = any(k for runs in per_wave for _, ks in runs for k in ks)
        shrunk = [wave_k_runs(arm, lens[:b], scenario.output_len)
                  for lens in waves for b in range(1, len(lens))] if drafts else []
        key = _config_key(exp, arm, per_wave + shrunk)
        groups.setdefault(key, []).append(arm.name)
        for w, (lens, runs) in enumerate(zip(waves, per_wave)):
            crossings.extend(_crossings(arm, w, lens, runs))
        k_values[arm.name] = tuple(sorted({k for runs in per_wave for _, ks in runs for k in ks}))
    return ScenarioDryRun(
        name=scenario.name,
        batch_size=scenario.batch_size,
        num_waves=len(waves),
        controls=tuple(tuple(g) for g in groups.values() if len(g) >= 2),
        crossings=tuple(crossings),
        k_values=k_values,
    )


def outside_profile(arm: Arm, scenario: Scenario, waves: Sequence[Sequence[int]]) -> str | None:
    """Why an adaptive arm's step costs are extrapolated on `scenario` (None: inside its box).

    Its concurrent requests (the wave size) or their contexts (prompt to prompt + output) beyond
    the profile's box, slack included (`StepCostModel.covers`), are cells the policy learns
    online: a few K <= 1 probe steps and a guard (B16 x ctx 512 on the AVX2 EPYC: cold 0.958x
    no-spec with a B {1, 4} profile, 0.998x with one covering B = 16, 2026-12-04)."""
    prior = arm.policy.adaptive_config.cost_prior if arm.policy.is_adaptive else None
    if prior is None:
        return None
    lens = [n for wave in waves for n in wave]
    b = max(len(w) for w in waves)
    lo, hi = min(lens), max(lens) + scenario.output_len
    if prior.covers(b, lo) and prior.covers(b, hi):
        return None
    box = f"batch {prior.batch_range}, ctx {prior.ctx_range}"
    return (f"scenario {scenario.name!r}: adaptive arm {arm.name!r}'s profile covers {box}; "
            f"{b} concurrent requests at ctx {lo}-{hi} lie outside it: step costs there are "
            f"extrapolated and learned online (profile the batch sizes and contexts you serve)")


def dry_run(exp: Experiment) -> DryRun:
    """Classify every scenario and collect the warnings a reader must not miss."""
    results = tuple(classify_scenario(exp, s) for s in exp.scenarios)
    warnings: list[str] = []
    n_arms = len(exp.arms)
    for r in results:
        if r.all_controls:
            warnings.append(
                f"scenario {r.name!r}: ALL {n_arms} arms select the same K at every token "
                f"(one configuration): any difference measured there is noise, not a result"
            )
            continue
        for group in r.controls:
            if exp.baseline in group:
                others = ", ".join(a for a in group if a != exp.baseline)
                warnings.append(
                    f"scenario {r.name!r}: arm(s) {others} run the same configuration as the "
                    f"baseline {exp.baseline!r} (same K at every token): they can only tie"
                )
        for c in r.crossings:
            who = f" request {c.request}" if c.request is not None else ""
            warnings.append(
                f"scenario {r.name!r}: arm {c.arm!r}{who} crosses a bucket boundary at token "
                f"{c.token} (ctx {c.ctx}, wave {c.wave}): K {c.from_k} -> {c.to_k}"
            )
    for s in exp.scenarios:
        waves = scenario_waves(s, exp.seed)
        warnings.extend(w for arm in exp.arms if (w := outside_profile(arm, s, waves)))
    counts = sorted({exp.replicates_of(s) for s in exp.scenarios})
    uneven = [n for n in counts if n % n_arms]
    if n_arms >= 2 and uneven:
        warnings.append(
            f"replicates ({', '.join(map(str, uneven))}) not a multiple of the number of arms "
            f"({n_arms}): run positions are balanced only approximately"
        )
    return DryRun(results, tuple(warnings))
