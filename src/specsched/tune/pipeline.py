"""`specsched tune`'s library part: a profile -> a 2-D and a batch-only plan -> files + summary.

Files written into the output folder (atomically): `schedule_2d.json` (5-item, or 3-item when the
plan needs no context axis), `schedule_batch_only.json` (3-item, stock vLLM), `k_heatmap_2d.png`,
`speedup_2d.png`, `k_heatmap_batch_only.png`, `tune_summary.json` (the comparison below).
The comparison (predicted from the profile, geometric mean over the profiled cells): no-spec,
best static K, best batch-only, the 2-D plan, the per-cell oracle.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specsched.io import atomic_write_json
from specsched.planner import (
    Arm,
    CostModel,
    PlanConfig,
    PlanResult,
    Profile,
    goodput_table,
    make_plan,
)
from specsched.planner.interpolate import CostKind
from specsched.planner.plan_json import model_to_obj, plan_to_obj, static_k

SCHEDULE_2D = "schedule_2d.json"
SCHEDULE_BATCH_ONLY = "schedule_batch_only.json"
SUMMARY = "tune_summary.json"


@dataclass(frozen=True, slots=True)
class PlanSettings:
    """cost_model: step time from the fitted model or interpolation; acceptance_quantile: plan
    on this quantile of the measured mean acceptance (0.1: a 90% lower confidence bound)."""

    max_batch_ranges: int = 4
    max_ctx_ranges: int = 4
    min_gain: float = 0.0
    max_k: int | None = None
    cost_model: CostKind = CostKind.AUTO
    acceptance_quantile: float = 0.1
    floor: float = 0.98  # PlanConfig.floor


@dataclass(frozen=True, slots=True)
class TunePlans:
    plan_2d: PlanResult
    batch_only: PlanResult
    source: str

    def row(self, arm: Arm) -> dict[str, Any]:
        """Predicted numbers of one comparison arm (from the 2-D plan's table)."""
        r = self.plan_2d.arms[arm]
        if arm is Arm.BATCH_ONLY:
            config = json.dumps(self.batch_only.schedule.entries(3))
        elif arm is Arm.PLAN:
            s = self.plan_2d.schedule
            config = json.dumps(s.entries(3 if s.is_batch_only else 5))
        elif arm is Arm.ORACLE:
            config = "best K per cell"
        else:
            config = f"K={static_k(r)}"
        return {
            "arm": "2-D plan" if arm is Arm.PLAN else arm.value,
            "config": config,
            "ranges": "per cell" if arm is Arm.ORACLE else f"{r.shape[0]} x {r.shape[1]}",
            "geomean_speedup": r.geomean_speedup,
            "min_speedup": float(r.speedup.min()),
            "max_speedup": float(r.speedup.max()),
            "of_oracle": r.mean_of_oracle,
        }

    @property
    def best_static_k(self) -> int:
        return static_k(self.plan_2d.arms[Arm.STATIC])

    def rows(self) -> list[dict[str, Any]]:
        return [self.row(a) for a in Arm]


def plan_profile(profile: Profile, settings: PlanSettings, source: str) -> TunePlans:
    """Both plans on the profile's own grid (no extrapolation)."""
    model = CostModel.from_profile(profile, settings.cost_model, settings.acceptance_quantile)
    table = goodput_table(model, max_k=settings.max_k)
    n, k, g, f = settings.max_batch_ranges, settings.max_k, settings.min_gain, settings.floor
    plan_2d = make_plan(table, PlanConfig(n, settings.max_ctx_ranges, max_k=k, min_gain=g,
                                          floor=f))
    batch = make_plan(table, PlanConfig(n, 1, batch_only=True, max_k=k, min_gain=g, floor=f))
    return TunePlans(plan_2d, batch, source)


def write_tune_outputs(plans: TunePlans, out_dir: Path, plots: bool = True) -> list[Path]:
    """Schedules, plots and the summary into `out_dir`; returns the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, result in ((SCHEDULE_2D, plans.plan_2d), (SCHEDULE_BATCH_ONLY, plans.batch_only)):
        path = out_dir / name
        atomic_write_json(path, plan_to_obj(result, plans.source))
        written.append(path)
    if plots:
        from specsched.planner.plots import save_k_heatmap, save_speedup_surface

        written.append(save_k_heatmap(plans.plan_2d, out_dir / "k_heatmap_2d.png"))
        written.append(save_speedup_surface(plans.plan_2d, out_dir / "speedup_2d.png"))
        written.append(save_k_heatmap(plans.batch_only, out_dir / "k_heatmap_batch_only.png"))
    summary = {
        "source": plans.source,
        "best_static_k": plans.best_static_k,
        "schedule_2d": SCHEDULE_2D,
        "schedule_batch_only": SCHEDULE_BATCH_ONLY,
        "predicted": [
            {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}
            for row in plans.rows()
        ],
    }
    model = plans.plan_2d.table.model
    if model is not None:
        summary.update(model_to_obj(model))
    path = out_dir / SUMMARY
    atomic_write_json(path, summary)
    written.append(path)
    return written
