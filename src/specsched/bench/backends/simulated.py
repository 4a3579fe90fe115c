"""A deterministic toy backend: NOT a measurement. It exists to exercise the whole
plan -> run -> results -> report pipeline in tests and dry demos without a model or a server.

Toy model per decode step at K with constant per-token acceptance `a` (Leviathan et al.,
arXiv:2211.17192): expected tokens per step = (1 - a^(K+1)) / (1 - a); step time =
base_step_s * (1 + draft_cost*K + verify_cost*K*B*ctx/1e5). K comes from the same router walk as the
dry-run, so arms the dry-run calls controls get the same expected throughput here. On top:
per-arm multiplicative `effects`, a per-replicate `block_noise`, per-trial lognormal `noise`, and a
`position_bias` (fractional slowdown per run position) to test the order-bias estimate.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from specsched.bench.backends.base import RequestResult, TrialResult, TrialSpec
from specsched.bench.dryrun import wave_k_runs
from specsched.errors import UserError
from specsched.io import dataclass_from_mapping


@dataclass(frozen=True, slots=True)
class SimConfig:
    base_step_s: float = 0.02
    acceptance: float = 0.7
    draft_cost: float = 0.05
    verify_cost: float = 0.02
    prefill_s_per_token: float = 1e-5
    noise: float = 0.02  # sigma of log(time) per trial
    block_noise: float = 0.0  # sigma of log(time) shared by all arms of one replicate
    position_bias: float = 0.0  # time *= 1 + position_bias * position
    effects: Mapping[str, float] = field(default_factory=dict)  # arm -> throughput multiplier
    sleep_s: float = 0.0  # real sleep per trial (tests that kill a run mid-way)

    def __post_init__(self) -> None:
        if not 0 <= self.acceptance < 1:
            raise UserError(f"simulated: acceptance must be in [0, 1), got {self.acceptance}")
        for name in ("base_step_s", "noise", "block_noise", "draft_cost", "verify_cost",
                     "prefill_s_per_token", "sleep_s"):
            if getattr(self, name) < 0:
                raise UserError(f"simulated: {name} must be >= 0")
        for arm, mult in self.effects.items():
            if not isinstance(mult, (int, float)) or mult <= 0:
                raise UserError(f"simulated: effects[{arm!r}] must be a number > 0")

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> SimConfig:
        return dataclass_from_mapping(cls, options, "simulated backend_options")


def tokens_per_step(k: float, a: float) -> float:
    """Expected tokens per verify step with K drafts at constant acceptance a (K may be a mean)."""
    return (1 - a ** (k + 1)) / (1 - a)


class SimulatedBackend:
    """Deterministic in (trial seed, arm, position); never sleeps unless `sleep_s` > 0."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config

    def run_trial(self, trial: TrialSpec) -> TrialResult:
        c = self.config
        arm, scenario = trial.arm, trial.scenario
        b = scenario.batch_size
        lens = [s.num_prompt_tokens for s in trial.shapes]
        requests: list[RequestResult] = []
        hist: dict[int, int] = {}
        clock = 0.0
        for start in range(0, len(lens), b):
            wave = lens[start : start + b]
            prefill = c.prefill_s_per_token * sum(wave)
            itl: list[float] = []
            runs = wave_k_runs(arm, wave, scenario.output_len)
            ends = [t for t, _ in runs[1:]] + [scenario.output_len]
            decode = 0.0
            for (t0, ks), t1 in zip(runs, ends):
                k = sum(ks) / len(ks)
                ctx = sum(wave) / len(wave) + (t0 + t1) / 2
                step = c.base_step_s * (1 + c.draft_cost * k + c.verify_cost * k * len(wave) * ctx
                                        / 1e5)
                per_step = tokens_per_step(k, c.acceptance)
                steps = (t1 - t0) / per_step
                decode += steps * step
                hist[round(k)] = hist.get(round(k), 0) + max(1, round(steps))
                itl.extend([step / per_step] * (t1 - t0))
            for p in wave:
                requests.append(RequestResult(p, scenario.output_len, clock + prefill,
                                              clock + prefill + decode, tuple(itl[1:])))
            clock += prefill + decode
        factor = self._factor(trial)
        if c.sleep_s:
            time.sleep(c.sleep_s)
        scaled = tuple(
            RequestResult(r.num_prompt_tokens, r.num_output_tokens, r.ttft_s * factor,
                          r.latency_s * factor, tuple(x * factor for x in r.itl_s))
            for r in requests
        )
        return TrialResult(scaled, clock * factor, hist, {"simulated": True})

    def _factor(self, trial: TrialSpec) -> float:
        """Multiplier on time: effect, replicate block noise, trial noise, position bias."""
        c = self.config
        block = random.Random(f"{trial.seed}/block").gauss(0.0, 1.0) * c.block_noise
        own = random.Random(f"{trial.seed}/{trial.arm.name}/{trial.warmup}").gauss(0.0, 1.0)
        effect = float(c.effects.get(trial.arm.name, 1.0))
        return math.exp(block + own * c.noise) / effect * (1 + c.position_bias * trial.position)

    def close(self) -> None:
        return None
