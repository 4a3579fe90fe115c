"""The demo's experiment file: no-spec vs the best static K vs the planned batch-only schedule vs
the planned 2-D schedule vs the adaptive (closed-loop) policy with the 2-D plan as its prior and
the profile's costs and acceptance as its priors, on the demo scenarios, on the engine backend.

Written as `experiment.yaml` next to the schedules it references, so the same comparison can be
rerun or extended by hand: `specsched bench demo-out/experiment.yaml --dry-run`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from specsched.demo.config import DemoConfig, DemoScenario, Shape
from specsched.io import atomic_write_text
from specsched.planner import Arm
from specsched.tune.pipeline import SCHEDULE_2D, SCHEDULE_BATCH_ONLY, TunePlans

BASELINE = "no-spec"
ARM_BATCH_ONLY = "batch-only"
ARM_2D = "2-D"
ARM_ADAPTIVE = "adaptive"
PROFILE = "profile.json"


def static_arm_name(k: int) -> str:
    return f"static-K{k}"


def choose_batch_size(plans: TunePlans) -> int:
    """The profiled batch size where the context axis matters most: the row in which the 2-D plan
    is predicted to beat the batch-only plan by the most (mean fraction of oracle goodput); if
    they agree everywhere, the row with the 2-D plan's largest predicted gain over no-spec; ties
    go to the smaller batch (cheaper trials)."""
    t = plans.plan_2d.table
    plan, batch = plans.plan_2d.arms[Arm.PLAN], plans.plan_2d.arms[Arm.BATCH_ONLY]
    edge = (plan.of_oracle - batch.of_oracle).mean(axis=1)  # [num_batch]
    gain = plan.speedup.mean(axis=1)  # [num_batch]
    best = max(range(len(t.batch_sizes)), key=lambda i: (round(float(edge[i]), 6),
                                                         round(float(gain[i]), 6), -i))
    return int(t.batch_sizes[best])


def resolved_scenarios(cfg: DemoConfig, plans: TunePlans) -> tuple[DemoScenario, ...]:
    b = choose_batch_size(plans)
    return tuple(s.with_batch(b) for s in cfg.scenarios)


def _scenario_obj(cfg: DemoConfig, s: DemoScenario) -> dict[str, Any]:
    n = s.num_requests(cfg.shape)
    if cfg.shape is Shape.SERVING:  # requests about one document: its prefix prefills once
        return {"name": s.name, "kind": "prefix_repetition", "prefix_len": s.ctx - s.tail,
                "suffix_len": s.tail, "range_ratio": s.range_ratio, "num_prefixes": 1,
                "num_requests": n, "concurrency": s.batch_size, "output_len": s.output_len}
    return {"name": s.name, "kind": "prefix_repetition", "prefix_len": s.ctx - s.suffix_len,
            "suffix_len": s.suffix_len, "num_prefixes": 1, "num_requests": n,
            "concurrency": s.batch_size, "output_len": s.output_len}


def experiment_obj(cfg: DemoConfig, static_k: int,
                   scenarios: tuple[DemoScenario, ...]) -> dict[str, Any]:
    """The experiment as plain data (YAML-ready). `static_k` >= 1 even when the plan's best
    static K is 0, so at least one fixed speculative configuration is measured."""
    spec = cfg.speculative
    return {
        "name": "specsched-demo",
        "backend": "engine",
        "backend_options": {
            "model": cfg.model,
            "threads": cfg.threads,
            "dtype": cfg.dtype,
            "window": spec.window,
            "num_sink_tokens": spec.num_sink_tokens,
            "max_num_seqs": cfg.max_num_seqs,
            "max_model_len": cfg.max_model_len,
            # serving: new text every replicate (no straggler repeated in every replicate);
            # wave: one text per scenario (the earlier demos' shape)
            "vary_text": cfg.shape is Shape.SERVING,
        },
        "drafter": spec.drafter_label,
        "seed": cfg.seed,
        "replicates": cfg.replicates,
        "warmup": 0,
        "baseline": BASELINE,
        "arms": [
            {"name": BASELINE, "k": 0},
            {"name": static_arm_name(static_k), "k": static_k},
            {"name": ARM_BATCH_ONLY, "schedule": SCHEDULE_BATCH_ONLY},
            {"name": ARM_2D, "schedule": SCHEDULE_2D},
            {"name": ARM_ADAPTIVE, "schedule": SCHEDULE_2D, "per_request_k": True,
             "policy": "adaptive", "adaptive": {"profile": PROFILE}},
        ],
        "scenarios": [_scenario_obj(cfg, s) for s in scenarios],
    }


def write_experiment(path: Path, cfg: DemoConfig, best_static_k: int,
                     scenarios: tuple[DemoScenario, ...]) -> None:
    header = (
        "# Written by `specsched demo`: no-spec vs static K vs the planned batch-only and 2-D\n"
        "# schedules vs the adaptive policy (2-D plan + profile as priors), reference engine.\n"
        "# Rerun: specsched bench <this file> --out r.jsonl\n"
        "# (warm-up 0: the engine backend prefills every prompt untimed before its timed trials,\n"
        "# and every arm of a replicate reads the same prompts from the prefix cache.)\n"
    )
    obj = experiment_obj(cfg, max(best_static_k, 1), scenarios)
    text = yaml.safe_dump(obj, sort_keys=False)
    atomic_write_text(path, header + text)
