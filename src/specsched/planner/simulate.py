"""Predict a workload's goodput by running a K policy step by step on a cost and acceptance model.

A steady-batch formula (goodput at one B and context) misses what the demo measured: a wave of
requests shrinks as they finish (a straggler may run alone), requests accept differently, contexts
grow by the tokens generated. The simulator plays the serving loop instead:

- requests start when a slot frees (closed loop, at most `concurrency` in flight, like
  `vllm bench serve --max-concurrency`), or in waves that refill only when the whole wave ends;
- every step the policy gets the real `BatchState` (prefill chunks included) and returns K per
  request; request i accepts its drafts one by one with its own per-position probabilities
  (a draw per position, seeded), emits accepted + 1 tokens (capped at its output length);
- the step takes `cost.predict(cost.features(...))` seconds (times a seeded log-normal noise);
  a prefill chunk is priced as a decoding row at its context (its last token reads the weights
  and attends over the cached prompt like a decode step: a 1-7 token chunk over a cached
  4,096-token prompt took 66-102 ms against the no-spec step's ~73 on the AVX-512 EPYC, where
  the unprofiled prefill term alone priced it at the step overhead, ~54) plus its other tokens
  on the prefill term;
- the policy observes the outcome, so a closed-loop policy is simulated as it would run.

Acceptance may change along a request (`phases`): a list of (from generated-token index, a per
position), e.g. repetitive text where drafts are accepted, then free text where they are not.
No torch here.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from specsched.policy import BatchState, KPolicy, RequestOutcome, StepOutcome
from specsched.policy.cost import StepCostModel

Phases = tuple[tuple[int, tuple[float, ...]], ...]  # (from generated index, a per position)


@dataclass(frozen=True, slots=True)
class SimRequest:
    prompt_len: int
    output_len: int
    phases: Phases  # first entry starts at 0

    def acceptance_at(self, generated: int) -> tuple[float, ...]:
        current = self.phases[0][1]
        for start, a in self.phases:
            if generated >= start:
                current = a
        return current


@dataclass(frozen=True, slots=True)
class Workload:
    requests: tuple[SimRequest, ...]
    concurrency: int
    waves: bool = False  # True: start the next `concurrency` requests only when all finished
    prefill_tokens: int | None = None  # per starting request; None: its prompt length
    # the most prefill tokens a step runs after one token per decoding request (the engine's
    # `max_num_batched_tokens`, chunked prefill): a refilled batch then decodes with a few of its
    # new requests while the rest still prefill. None: every new request prefills at once
    prefill_budget: int | None = None

    def __post_init__(self) -> None:
        if not self.requests or self.concurrency < 1:
            raise ValueError("a workload needs requests and concurrency >= 1")
        if self.prefill_budget is not None and self.prefill_budget < 1:
            raise ValueError("a workload's prefill_budget must be >= 1")


@dataclass(slots=True)
class SimResult:
    output_tokens: int = 0
    seconds: float = 0.0
    decode_seconds: float = 0.0  # steps with at least one decoding request
    steps: int = 0
    k_histogram: dict[int, int] = field(default_factory=dict)  # step K -> steps

    @property
    def goodput(self) -> float:
        """Output tokens per second over the whole run."""
        return self.output_tokens / self.seconds if self.seconds > 0 else 0.0


@dataclass(slots=True)
class _Live:
    index: int
    req: SimRequest
    generated: int = 0
    prefill_left: int = -1  # prompt tokens still to prefill (-1: not started)

    @property
    def prefilled(self) -> bool:
        return self.prefill_left == 0


def _accepted(a: Sequence[float], k: int, rng: random.Random) -> int:
    n = 0
    while n < k and rng.random() < (a[min(n, len(a) - 1)] if a else 0.0):
        n += 1
    return n


def simulate(workload: Workload, policy: KPolicy, cost: StepCostModel, seed: int = 0,
             noise: float = 0.0, max_steps: int = 1_000_000) -> SimResult:
    """Play the workload under `policy` (see module doc); deterministic for a seed."""
    rng = random.Random(seed)
    queue = list(enumerate(workload.requests))
    live: list[_Live] = []
    res = SimResult()
    while (queue or live) and res.steps < max_steps:
        if not workload.waves or not live:
            while queue and len(live) < workload.concurrency:
                i, req = queue.pop(0)
                live.append(_Live(i, req))
        batch = BatchState(
            num_computed_tokens=tuple(r.req.prompt_len + r.generated if r.prefilled else 0
                                      for r in live),
            num_prompt_tokens=tuple(r.req.prompt_len for r in live),
            room=tuple(max(0, r.req.output_len - r.generated - 1) for r in live),
            request_ids=tuple(r.index for r in live),
        )
        decision = policy.decide(batch)
        budget = math.inf if workload.prefill_budget is None else \
            max(0, workload.prefill_budget - sum(r.prefilled for r in live))
        prefill = 0
        prefill_ctx: list[int] = []  # [rows] what each chunk's last token attends over
        outcomes: list[RequestOutcome] = []
        for r, k in zip(live, decision.num_spec_tokens, strict=True):
            if not r.prefilled:
                if r.prefill_left < 0:
                    r.prefill_left = r.req.prompt_len if workload.prefill_tokens is None \
                        else workload.prefill_tokens
                chunk = int(min(r.prefill_left, budget))
                budget -= chunk
                prefill += chunk
                r.prefill_left -= chunk
                if chunk:
                    prefill_ctx.append(r.req.prompt_len - r.prefill_left - 1)
                if r.prefilled:  # the step that ends a prefill samples the first token
                    r.generated = 1
                    res.output_tokens += 1
                continue
            a = _accepted(r.req.acceptance_at(r.generated), k, rng)
            outcomes.append(RequestOutcome(r.index, r.req.prompt_len + r.generated, k, a))
            emitted = min(a + 1, r.req.output_len - r.generated)
            r.generated += emitted
            res.output_tokens += emitted
        outcome = StepOutcome(len(live), tuple(outcomes), None, decision.step_k, prefill,
                              tuple(prefill_ctx))
        x = cost.features(*outcome.step_rows())
        seconds = cost.predict(x) * (math.exp(rng.gauss(0.0, noise)) if noise else 1.0)
        res.seconds += seconds
        res.steps += 1
        if outcomes:
            res.decode_seconds += seconds
            res.k_histogram[decision.step_k] = res.k_histogram.get(decision.step_k, 0) + 1
        policy.observe(replace(outcome, step_time_s=seconds))
        live = [r for r in live if r.generated < r.req.output_len]
    return res
