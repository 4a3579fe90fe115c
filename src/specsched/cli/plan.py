"""`specsched plan`: profile (or roofline model) -> the K schedule maximizing goodput, with the
predicted gain over no-spec, the best static K, the best batch-only schedule and the oracle."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from specsched.cli._common import parse_int_list, print_json, stdout_console
from specsched.cli._predict import (
    add_predict_args,
    load_workload_arg,
    predict_plan_arms,
    predictions_to_obj,
    render_model,
    render_predictions,
)
from specsched.cli.profile_args import add_grid_args, add_roofline_args, roofline_from_args
from specsched.errors import UserError


def register(sub: Any) -> None:
    p = sub.add_parser("plan", help="choose K per (batch size, context) from a profile")
    p.add_argument("profile", nargs="?", help="profile.json (from `specsched profile`)")
    add_roofline_args(p)
    add_grid_args(p, "to plan for (profile: interpolated; roofline: the modelled grid)")
    p.add_argument("--max-k", type=int, default=None, help="never choose K above this")
    p.add_argument(
        "--batch-only", action="store_true", help="3-item schedule by batch size only (stock vLLM)"
    )
    p.add_argument("--max-batch-ranges", type=int, default=4, help="at most N batch ranges (4)")
    p.add_argument("--max-ctx-ranges", type=int, default=4, help="at most M context ranges (4)")
    p.add_argument(
        "--min-gain",
        type=float,
        default=0.0,
        help="keep K=0 unless speculation gains more than this fraction (e.g. 0.05)",
    )
    p.add_argument(
        "--floor",
        type=float,
        default=0.98,
        help="no range's K may be predicted below this x no-spec in any of its cells (0.98; "
        "0 turns the constraint off)",
    )
    p.add_argument(
        "--allow-extrapolation",
        action="store_true",
        help="cells outside the profile are predicted by the fitted model (interpolation: "
        "clamped to the edge) and flagged *, instead of failing",
    )
    add_predict_args(p)
    p.add_argument("--out", default=None, help="write the schedule JSON here")
    p.add_argument(
        "--plots", default=None, metavar="DIR", help="write k_heatmap.png and speedup.png into DIR"
    )
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from specsched.io import atomic_write_json
    from specsched.planner import (
        CostModel,
        Extrapolation,
        PlanConfig,
        goodput_table,
        load_profile,
        make_plan,
    )
    from specsched.planner.interpolate import CostKind

    if bool(args.profile) == bool(args.roofline):
        raise UserError("give a profile.json, or --roofline (with --gpu/--model), not both")
    if args.out and Path(args.out).exists() and not args.force:
        raise UserError(f"{args.out} exists; choose another --out or pass --force to overwrite")
    workload = load_workload_arg(args)
    config = PlanConfig(
        max_batch_ranges=args.max_batch_ranges,
        max_ctx_ranges=1 if args.batch_only else args.max_ctx_ranges,
        batch_only=args.batch_only,
        max_k=args.max_k,
        min_gain=args.min_gain,
        floor=args.floor,
        extrapolation=Extrapolation.CLAMP if args.allow_extrapolation else Extrapolation.ERROR,
    )
    if args.roofline:
        profile, source = roofline_from_args(args), f"roofline {args.gpu} {args.model}"
        cells_b = cells_c = None
    else:
        if args.acceptance is not None:
            raise UserError("--acceptance goes with --roofline (or `specsched profile` imports)")
        profile, source = load_profile(args.profile), str(args.profile)
        cells_b = parse_int_list(args.batch_sizes, "--batch-sizes", 1) if args.batch_sizes else None
        cells_c = parse_int_list(args.contexts, "--contexts", 1) if args.contexts else None
    model = CostModel.from_profile(profile, CostKind(args.cost_model), args.acceptance_quantile)
    table = goodput_table(
        model,
        tuple(cells_b) if cells_b else None,
        tuple(cells_c) if cells_c else None,
        config.max_k,
        config.extrapolation,
    )
    result = make_plan(table, config)
    from specsched.planner.plan_json import plan_to_obj

    obj = plan_to_obj(result, source)
    preds = None
    if workload is not None:
        batch_only = result.schedule if config.batch_only else make_plan(
            table, dataclasses.replace(config, max_ctx_ranges=1, batch_only=True)).schedule
        preds = predict_plan_arms(profile, result, batch_only, workload, args.seeds)
        obj["specsched_plan"]["workload_prediction"] = predictions_to_obj(
            preds, args.workload, args.seeds)
    if args.out:
        atomic_write_json(args.out, obj)
    written = [args.out] if args.out else []
    if args.plots:
        from specsched.planner.plots import save_k_heatmap, save_speedup_surface

        Path(args.plots).mkdir(parents=True, exist_ok=True)
        written.append(str(save_k_heatmap(result, Path(args.plots) / "k_heatmap.png")))
        written.append(str(save_speedup_surface(result, Path(args.plots) / "speedup.png")))
    if args.json:
        print_json(obj)
    else:
        _render(result, source)
        render_model(model)
        if preds is not None:
            render_predictions(preds, args.workload)
        for path in written:
            stdout_console().print(f"wrote {path}")
    return 0


def _render(result: Any, source: str) -> None:
    from rich.table import Table

    from specsched.planner import Arm

    console = stdout_console()
    t = result.table
    plan = result.arms[Arm.PLAN]
    grid = Table(title=f"planned K (predicted speedup vs no-spec) from {source}")
    grid.add_column("batch \\ ctx")
    for c in t.contexts:
        grid.add_column(str(c), justify="right")
    for i, b in enumerate(t.batch_sizes):
        row = []
        for j in range(len(t.contexts)):
            flag = "*" if t.extrapolated[i, j] else ""
            row.append(f"K={plan.k_cells[i, j]} x{plan.speedup[i, j]:.2f}{flag}")
        grid.add_row(str(b), *row)
    console.print(grid)
    arms = Table(title="predicted goodput vs no-spec (geometric mean over cells)")
    for col in ("schedule", "ranges (batch x ctx)", "speedup", "min", "max", "of oracle"):
        arms.add_column(col, justify="left" if col == "schedule" else "right")
    for a, r in result.arms.items():
        shape = "per cell" if a is Arm.ORACLE else f"{r.shape[0]} x {r.shape[1]}"
        arms.add_row(
            a.value,
            shape,
            f"x{r.geomean_speedup:.3f}",
            f"x{r.speedup.min():.2f}",
            f"x{r.speedup.max():.2f}",
            f"{100 * r.mean_of_oracle:.1f}%",
        )
    console.print(arms)
    if t.extrapolated.any():
        console.print("[yellow]* clamped to the profile's edge (extrapolation)[/]")
    sched = result.schedule
    console.print(f"schedule: {json.dumps(sched.entries(3 if sched.is_batch_only else 5))}")
