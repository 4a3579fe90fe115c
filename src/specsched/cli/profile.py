"""`specsched profile`: build, import or inspect a profile.json for the planner.

Modes (one at a time):
  specsched profile PROFILE.json                      validate and print a profile
  specsched profile --from-vllm-bench FILE... --out P import `vllm bench serve` result files
  ... --from-vllm-trace TRACE | --from-vllm-metrics FILE   acceptance measured by specsched's
      vLLM scheduler class: replaces the acceptance of the profile the mode above builds (or,
      alone, writes an acceptance-only profile)
  specsched profile --roofline --gpu G --model M --out P   analytic profile (no hardware needed)
  specsched profile --engine --out P                  measure on specsched's engine (resumable)
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from specsched.cli._common import print_json, stdout_console
from specsched.cli.profile_args import (
    add_grid_args,
    add_roofline_args,
    parse_acceptance,
    roofline_from_args,
)
from specsched.cli.profile_engine import add_engine_args, run_engine_mode
from specsched.errors import UserError
from specsched.planner import Profile


def register(sub: Any) -> None:
    p = sub.add_parser("profile", help="build, import or inspect a profile.json for the planner")
    p.add_argument("profile", nargs="?", help="an existing profile.json to validate and print")
    p.add_argument(
        "--from-vllm-bench",
        nargs="+",
        metavar="FILE",
        help="import `vllm bench serve --save-result` files (JSON or JSON lines)",
    )
    p.add_argument("--from-vllm-trace", metavar="TRACE", default=None,
                   help="acceptance per position per context from specsched's vLLM trace")
    p.add_argument("--from-vllm-metrics", metavar="FILE", default=None,
                   help="the same from a saved /metrics page (specsched_* counters)")
    p.add_argument(
        "--k",
        type=int,
        default=None,
        help="K of every imported run (else metadata k=N or k<N> in the file name)",
    )
    p.add_argument(
        "--ctx",
        type=int,
        default=None,
        help="context of every imported run (else metadata ctx=N, else derived)",
    )
    p.add_argument(
        "--engine",
        action="store_true",
        help="measure on specsched's reference engine (resumable; needs the engine)",
    )
    add_roofline_args(p, engine_aware=True)
    add_grid_args(p, "to profile")
    add_engine_args(p)
    p.add_argument("--out", default=None, help="where to write the profile (e.g. profile.json)")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p.add_argument("--json", action="store_true", help="print the profile as JSON")
    p.set_defaults(func=run)


def _write(profile: Any, args: argparse.Namespace) -> None:
    from specsched.planner import save_profile

    if args.out is None:
        raise UserError("--out is required: where should the profile go? (e.g. --out profile.json)")
    if Path(args.out).exists() and not args.force:
        raise UserError(f"{args.out} exists; choose another --out or pass --force to overwrite")
    save_profile(profile, args.out)


def run(args: argparse.Namespace) -> int:
    from specsched.planner import import_vllm_bench, load_profile, profile_to_obj

    modes = [bool(args.profile), bool(args.from_vllm_bench), args.roofline, args.engine]
    measured = args.from_vllm_trace or args.from_vllm_metrics
    if sum(modes) != 1 and not (measured and sum(modes) == 0):
        raise UserError(
            "give exactly one of: PROFILE.json, --from-vllm-bench FILE..., --roofline, --engine"
        )
    if measured:
        profile = _measured_acceptance(args)
    elif args.engine:
        profile = run_engine_mode(args)
    elif args.from_vllm_bench:
        profile = import_vllm_bench(
            args.from_vllm_bench, args.k, args.ctx, parse_acceptance(args.acceptance)
        )
        _write(profile, args)
    elif args.roofline:
        profile = roofline_from_args(args)
        _write(profile, args)
    else:
        profile = load_profile(args.profile)
    if args.json:
        print_json(profile_to_obj(profile))
    else:
        render_profile(profile, args.out or args.profile)
    return 0


def _measured_acceptance(args: argparse.Namespace) -> Profile:
    """The profile of the chosen mode (or none) with acceptance from a vLLM trace / metrics."""
    from specsched.planner import import_vllm_bench, load_profile
    from specsched.planner.vllm_trace import (
        acceptance_from_metrics,
        acceptance_from_trace,
        with_acceptance,
    )

    if args.from_vllm_trace and args.from_vllm_metrics:
        raise UserError("give one of --from-vllm-trace and --from-vllm-metrics")
    if args.engine:
        raise UserError("--engine measures its own acceptance; drop --from-vllm-trace/-metrics")
    base: Profile | None = None
    if args.profile:
        base = load_profile(args.profile)
    elif args.from_vllm_bench:
        # the bench runs' own acceptance (or this stand-in when they carry none) is replaced
        base = import_vllm_bench(args.from_vllm_bench, args.k, args.ctx, (1.0,))
    elif args.roofline:
        base = roofline_from_args(args)
    if args.from_vllm_trace:
        points, source = acceptance_from_trace(args.from_vllm_trace), args.from_vllm_trace
    else:
        points, source = acceptance_from_metrics(args.from_vllm_metrics), args.from_vllm_metrics
    profile = with_acceptance(base, points, Path(source).name)
    _write(profile, args)
    return profile


def render_profile(profile: Any, name: str) -> None:
    """Metadata, T per (batch, ctx) x K, acceptance per context; notes what blocks planning."""
    from rich.table import Table

    from specsched.planner import expected_tokens

    console = stdout_console()
    m, g = profile.metadata, profile.grid
    console.print(
        f"[bold]{name}[/]: model {m.model}, drafter {m.drafter}, device {m.device}, "
        f"dtype {m.dtype}, source {m.source.value}"
    )
    if m.notes:
        console.print(f"notes: {m.notes}")
    table = Table(title="step time T (ms, median) by K")
    table.add_column("batch")
    table.add_column("ctx")
    for k in g.ks:
        table.add_column(f"K={k}", justify="right")
    for c in g.contexts:
        for b in g.batch_sizes:
            cells = []
            for k in g.ks:
                t = profile.timing(b, c, k)
                cells.append("-" if t is None else f"{t.t_step_ms.median:.3g}")
            table.add_row(str(b), str(c), *cells)
    console.print(table)
    if profile.acceptance:
        acc = Table(title="acceptance per draft position")
        acc.add_column("ctx")
        acc.add_column("a_1..a_K")
        acc.add_column(f"E(tokens/step) at K={g.ks[-1]} [CI]", justify="right")
        acc.add_column("requests", justify="right")
        for a in profile.acceptance:
            k = min(g.ks[-1], len(a.a))
            e = f"{expected_tokens(a.a, k):.2f}"
            if a.ci_lo is not None and a.ci_hi is not None:
                e += (f" [{expected_tokens(a.ci_lo, k):.2f}, {expected_tokens(a.ci_hi, k):.2f}] "
                      f"({100 * a.ci_level:.0f}%)")
            acc.add_row(str(a.ctx), " ".join(f"{x:.2f}" for x in a.a), e,
                        str(a.num_requests or "-"))
        console.print(acc)
    missing = profile.missing_points()
    if missing:
        console.print(f"[yellow]{len(missing)} grid points not measured yet[/]")
    else:
        console.print("complete: ready for `specsched plan`")
