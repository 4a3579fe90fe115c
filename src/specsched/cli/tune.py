"""`specsched tune`: profile the reference engine (resumable), then plan a 2-D and a batch-only
schedule from that profile, write them with plots and a summary, print the predicted comparison.

    specsched tune --out tune-out/                      # SmolLM2, batch 1,4 x ctx 512,2048
    specsched tune --batch-sizes 1,4,16 --contexts 512,4096 --ks 0,1,2,3,4 --resume
    specsched tune --workload workload.yaml   # + each arm predicted on that workload (simulated)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from specsched.cli._common import print_json, stdout_console
from specsched.cli._predict import (
    add_predict_args,
    load_workload_arg,
    predict_plan_arms,
    predictions_to_obj,
    render_model,
    render_predictions,
)
from specsched.cli.profile_args import (
    ENGINE_BATCH_SIZES,
    ENGINE_CONTEXTS,
    ENGINE_KS,
    ENGINE_MODEL,
)
from specsched.cli.profile_engine import add_engine_args, prepare_profile_out, run_engine_profile
from specsched.cli.spec_flags import add_drafter_arg
from specsched.io import atomic_write_json
from specsched.tune.pipeline import PlanSettings

PROFILE = "profile.json"
PREDICTION = "workload_prediction.json"


def add_tune_grid_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=ENGINE_MODEL,
                   help=f"{ENGINE_MODEL} (default), a .gguf file or a HF directory")
    add_drafter_arg(p)
    p.add_argument("--batch-sizes", default=ENGINE_BATCH_SIZES,
                   help=f"batch sizes to profile (default {ENGINE_BATCH_SIZES})")
    p.add_argument("--contexts", default=ENGINE_CONTEXTS,
                   help=f"context lengths to profile (default {ENGINE_CONTEXTS})")
    p.add_argument("--ks", default=ENGINE_KS, help=f"K values (default {ENGINE_KS})")


def add_plan_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-batch-ranges", type=int, default=4, help="at most N batch ranges (4)")
    p.add_argument("--max-ctx-ranges", type=int, default=4, help="at most M context ranges (4)")
    p.add_argument("--min-gain", type=float, default=0.0,
                   help="keep K=0 unless speculation is predicted to gain more than this fraction")
    p.add_argument("--floor", type=float, default=0.98,
                   help="no range's K may be predicted below this x no-spec in any of its cells "
                        "(0.98; 0 turns the constraint off)")
    p.add_argument("--max-k", type=int, default=None, help="never choose K above this")
    add_predict_args(p)


def register(sub: Any) -> None:
    p = sub.add_parser("tune", help="profile the engine, then plan 2-D and batch-only schedules")
    add_tune_grid_args(p)
    add_engine_args(p)
    add_plan_args(p)
    p.add_argument("--out", type=Path, default=Path("tune-out"),
                   help="output folder (default tune-out/)")
    p.add_argument("--force", action="store_true", help="start the profile over")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG heatmaps")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def plan_settings(args: argparse.Namespace) -> PlanSettings:
    from specsched.planner.interpolate import CostKind

    return PlanSettings(args.max_batch_ranges, args.max_ctx_ranges, args.min_gain, args.max_k,
                        CostKind(args.cost_model), args.acceptance_quantile, args.floor)


def run(args: argparse.Namespace) -> int:
    from specsched.tune.pipeline import plan_profile, write_tune_outputs

    workload = load_workload_arg(args)
    args.out.mkdir(parents=True, exist_ok=True)
    profile_path = args.out / PROFILE
    prepare_profile_out(profile_path, args.resume, args.force)
    profile = run_engine_profile(args, profile_path)
    plans = plan_profile(profile, plan_settings(args), str(profile_path))
    written = write_tune_outputs(plans, args.out, plots=not args.no_plots)
    preds = None
    if workload is not None:
        preds = predict_plan_arms(profile, plans.plan_2d, plans.batch_only.schedule, workload,
                                  args.seeds)
        path = args.out / PREDICTION
        atomic_write_json(path, predictions_to_obj(preds, args.workload, args.seeds))
        written.append(path)
    if args.json:
        summary = json.loads((args.out / "tune_summary.json").read_text())
        if preds is not None:
            summary["workload_prediction"] = predictions_to_obj(preds, args.workload, args.seeds)
        print_json(summary)
        return 0
    render_tune(plans)
    if plans.plan_2d.table.model is not None:
        render_model(plans.plan_2d.table.model)
    if preds is not None:
        render_predictions(preds, args.workload)
    stdout_console().print("wrote " + ", ".join(str(p) for p in [profile_path, *written]))
    return 0


def render_tune(plans: Any) -> None:
    """The planned K grid (2-D) and the predicted comparison table."""
    from rich.table import Table

    from specsched.planner import Arm

    console = stdout_console()
    t = plans.plan_2d.table
    plan = plans.plan_2d.arms[Arm.PLAN]
    batch = plans.plan_2d.arms[Arm.BATCH_ONLY]
    grid = Table(title="planned K, 2-D | batch-only (predicted speedup vs no-spec)")
    grid.add_column("batch \\ ctx")
    for c in t.contexts:
        grid.add_column(str(c), justify="right")
    for i, b in enumerate(t.batch_sizes):
        grid.add_row(str(b), *(
            f"K={plan.k_cells[i, j]} x{plan.speedup[i, j]:.2f} | "
            f"K={batch.k_cells[i, j]} x{batch.speedup[i, j]:.2f}"
            for j in range(len(t.contexts))
        ))
    console.print(grid)
    arms = Table(title="predicted goodput vs no-spec (geometric mean over profiled cells)")
    for col in ("schedule", "config", "ranges", "speedup", "min", "max", "of oracle"):
        arms.add_column(col, justify="left" if col in ("schedule", "config") else "right")
    for r in plans.rows():
        arms.add_row(r["arm"], r["config"], r["ranges"], f"x{r['geomean_speedup']:.3f}",
                     f"x{r['min_speedup']:.2f}", f"x{r['max_speedup']:.2f}",
                     f"{100 * r['of_oracle']:.1f}%")
    console.print(arms)
