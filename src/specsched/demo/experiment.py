"""The demo's experiment file: no-spec vs the best static K vs the planned batch-only schedule vs
the planned 2-D schedule, on the demo scenarios, on the engine backend.

Written as `experiment.yaml` next to the schedules it references, so the same comparison can be
rerun or extended by hand: `specsched bench demo-out/experiment.yaml --dry-run`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from specsched.demo.config import DemoConfig, DemoScenario
from specsched.io import atomic_write_text
from specsched.planner import Arm
from specsched.tune.pipeline import SCHEDULE_2D, SCHEDULE_BATCH_ONLY, TunePlans

BASELINE = "no-spec"
ARM_BATCH_ONLY = "batch-only"
ARM_2D = "2-D"


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


def experiment_obj(cfg: DemoConfig, best_static_k: int,
                   scenarios: tuple[DemoScenario, ...]) -> dict[str, Any]:
    """The experiment as plain data (YAML-ready)."""
    return {
        "name": "specsched-demo",
        "backend": "engine",
        "backend_options": {
            "model": cfg.model,
            "threads": cfg.threads,
            "dtype": cfg.dtype,
            "window": cfg.speculative.window,
            "num_sink_tokens": cfg.speculative.num_sink_tokens,
            "max_num_seqs": cfg.max_num_seqs,
            "max_model_len": cfg.max_model_len,
            "vary_text": False,
        },
        "drafter": cfg.speculative.drafter_label,
        "seed": cfg.seed,
        "replicates": cfg.replicates,
        "warmup": 0,
        "baseline": BASELINE,
        "arms": [
            {"name": BASELINE, "k": 0},
            {"name": static_arm_name(best_static_k), "k": best_static_k},
            {"name": ARM_BATCH_ONLY, "schedule": SCHEDULE_BATCH_ONLY},
            {"name": ARM_2D, "schedule": SCHEDULE_2D},
        ],
        "scenarios": [
            {
                "name": s.name,
                "kind": "prefix_repetition",
                "prefix_len": s.ctx - s.suffix_len,
                "suffix_len": s.suffix_len,
                "num_prefixes": 1,
                "num_requests": s.batch_size,
                "concurrency": s.batch_size,
                "output_len": s.output_len,
            }
            for s in scenarios
        ],
    }


def write_experiment(path: Path, cfg: DemoConfig, best_static_k: int,
                     scenarios: tuple[DemoScenario, ...]) -> None:
    header = (
        "# Written by `specsched demo`: no-spec vs best static K vs the planned batch-only and\n"
        "# 2-D schedules on the reference engine.\n"
        "# Rerun: specsched bench <this file> --out r.jsonl\n"
        "# (warm-up 0: the engine backend prefills every prompt untimed before its timed trials;\n"
        "# vary_text false: one text per scenario, so one long prefill per scenario.)\n"
    )
    text = yaml.safe_dump(experiment_obj(cfg, best_static_k, scenarios), sort_keys=False)
    atomic_write_text(path, header + text)
