"""How much of an engine step the K decision costs, at 64 requests (issue 14: < 1 %).

Measured in one run, side by side: (1) `decide` + `observe` of the adaptive policy (per request
and per step) and of the static schedule policy, on a 64-request batch with realistic state (the
policy has seen 200 steps first), best of repeats; (2) the engine's decode step with those 64
requests (SmolLM2, K = 0, the same contexts), median of timed steps. Prints both and the ratio.

    .venv/bin/python benchmarks/policy_overhead.py [--requests 64] [--ctx 256] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import time
from typing import Any

from specsched.policy import (
    AdaptiveConfig,
    BatchState,
    KPolicy,
    PolicyConfig,
    PolicyKind,
    RequestOutcome,
    StepOutcome,
)
from specsched.policy.cost import StepCostModel
from specsched.policy.cost_shape import CostShape
from specsched.schedule import Schedule

# a profile's fit carries its shape (measured / fitted per profiled point, `cost_shape`): a 3 x 2
# x 6 grid like the AVX-512 EPYC profile of 2026-12-05, ratios 0.85-1.15
SHAPE = CostShape.from_points([(b, c, k, 1.0 + 0.03 * ((b + k + c // 512) % 11 - 5))
                               for b in (1, 4, 16) for c in (512, 4096) for k in range(6)])
COST = StepCostModel((0.015, 0.002, 0.005, 0.002, 0.0015, 0.015, 0.00002), 0.0, 0, 0.08,
                     shape=SHAPE)


def _batch(n: int, ctx: int, step: int) -> BatchState:
    computed = tuple(ctx + step + (i * 37) % 200 for i in range(n))
    return BatchState(computed, (ctx,) * n, (64,) * n, tuple(range(n)))


def _outcome(batch: BatchState, ks: tuple[int, ...], rng: random.Random) -> StepOutcome:
    reqs = tuple(RequestOutcome(i, c, k, min(k, int(rng.random() * (k + 1))))
                 for i, (c, k) in enumerate(zip(batch.num_computed_tokens, ks, strict=True)))
    return StepOutcome(len(batch), reqs, 0.1, max(ks))


def time_policy(policy: KPolicy, n: int, ctx: int, repeats: int = 7) -> float:
    """Best-of-repeats seconds per decide + observe after a 200-step warm-up."""
    rng = random.Random(0)
    for step in range(200):
        b = _batch(n, ctx, step)
        policy.observe(_outcome(b, policy.decide(b).num_spec_tokens, rng))
    best = float("inf")
    for r in range(repeats):
        batches = [_batch(n, ctx, 200 + 50 * r + i) for i in range(50)]
        t0 = time.perf_counter()
        for b in batches:
            policy.observe(_outcome(b, policy.decide(b).num_spec_tokens, rng))
        best = min(best, (time.perf_counter() - t0) / len(batches))
    return best


def engine_step_s(n: int, ctx: int, steps: int = 12) -> float:
    """Median decode step (K = 0) of the engine with n requests of ctx tokens."""
    from specsched.engine import LLM, SamplingParams
    from specsched.engine.driver import drive

    llm = LLM("smollm2-135m", max_num_seqs=n, max_model_len=ctx + steps + 64,
              max_num_batched_tokens=4096, num_threads=1)
    pieces = llm.corpus_token_ids()
    prompts = [pieces[i * 997 : i * 997 + ctx] for i in range(n)]
    res = drive(llm.engine, prompts, SamplingParams(max_tokens=steps + 4, ignore_eos=True))
    times = [s.wall_s for s in res.steps if s.all_decoding]
    return statistics.median(times[2:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    n, ctx = args.requests, args.ctx
    adaptive = AdaptiveConfig(max_k=4, cost_prior=COST, acceptance_prior=((1, (0.7,) * 4),))
    policies: dict[str, PolicyConfig] = {
        "static schedule": PolicyConfig(schedule=Schedule.constant(2)),
        "adaptive per request": PolicyConfig(kind=PolicyKind.ADAPTIVE, adaptive=adaptive,
                                             per_request_k=True),
        "adaptive per step": PolicyConfig(kind=PolicyKind.ADAPTIVE, adaptive=adaptive),
    }
    decide = {name: time_policy(cfg.build(), n, ctx) for name, cfg in policies.items()}
    step = engine_step_s(n, ctx)
    out: dict[str, Any] = {"requests": n, "ctx": ctx, "engine_step_ms": 1000 * step,
                           "python": platform.python_version(), "policies": {}}
    print(f"engine decode step, {n} requests x ctx {ctx} (K=0, 1 thread): {1000 * step:.1f} ms")
    for name, s in decide.items():
        out["policies"][name] = {"decide_observe_us": 1e6 * s, "fraction_of_step": s / step}
        print(f"{name:22s}: decide+observe {1e6 * s:8.1f} us = {100 * s / step:.3f} % of a step")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
