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
from typing import TYPE_CHECKING, Any

from specsched.cli._common import parse_int_list, print_json, stdout_console
from specsched.cli.spec_flags import add_drafter_args, speculative_from_args
from specsched.errors import UserError
from specsched.planner import Profile, ProfileGrid

if TYPE_CHECKING:
    from specsched.tune.engine_profile import EngineProfileConfig

DEFAULT_BATCH_SIZES = "1,4,16,64,256"
DEFAULT_CONTEXTS = "512,2048,8192,32768"
DEFAULT_KS = "0,1,2,3,4,6,8"
DEFAULT_MODEL = "llama-3.1-8b"
# The reference engine on a CPU: small defaults (a point costs seconds, a 4k prefill a minute).
ENGINE_BATCH_SIZES = "1,4"
ENGINE_CONTEXTS = "512,2048"
ENGINE_KS = "0,1,2,3"
ENGINE_MODEL = "smollm2-135m"


def parse_acceptance(text: str | None) -> tuple[float, ...] | None:
    """'0.8' (every position) or '0.9,0.85,0.8' (per draft position) -> floats in [0, 1]."""
    if text is None:
        return None
    out: list[float] = []
    for i, item in enumerate(t.strip() for t in text.split(",") if t.strip()):
        try:
            value = float(item)
        except ValueError:
            raise UserError(f"--acceptance: item {i} ({item!r}) is not a number") from None
        if not 0.0 <= value <= 1.0:
            raise UserError(f"--acceptance: item {i} ({value}) must be in [0, 1]")
        out.append(value)
    if not out:
        raise UserError("--acceptance: expected a rate like 0.8 or a list like 0.9,0.85,0.8")
    return tuple(out)


def add_roofline_args(p: argparse.ArgumentParser, engine_aware: bool = False) -> None:
    """Arguments of the analytic roofline model, shared with `specsched plan`. `engine_aware`:
    --model and --ks default to None, resolved per mode (roofline vs --engine)."""
    g = p.add_argument_group("roofline model (plan for hardware you don't have)")
    g.add_argument("--roofline", action="store_true", help="use the analytic cost model")
    g.add_argument(
        "--gpu",
        default="H100-SXM",
        help="H100-SXM, H200, A100-80GB, L40S, or a JSON hardware spec (default H100-SXM)",
    )
    g.add_argument(
        "--model",
        default=None if engine_aware else DEFAULT_MODEL,
        help="roofline: llama-3.1-8b (default), llama-3.1-70b, qwen2.5-7b, smollm2-135m, or a "
        "JSON spec / HF config.json; --engine: smollm2-135m (default), a .gguf or HF directory",
    )
    g.add_argument(
        "--drafter",
        default="streaming",
        help="'streaming' (StreamingLLM self-draft, MagicDec) or a draft model preset / "
        "JSON (default streaming)",
    )
    g.add_argument(
        "--draft-window",
        type=int,
        default=512,
        help="StreamingLLM KV window of the self-draft, tokens (default 512)",
    )
    g.add_argument(
        "--ks",
        default=None if engine_aware else DEFAULT_KS,
        help=f"K values (default {DEFAULT_KS}; --engine: {ENGINE_KS}); 0 is always added",
    )


def add_grid_args(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--batch-sizes",
        default=None,
        help=f"comma-separated batch sizes {what} (default {DEFAULT_BATCH_SIZES})",
    )
    p.add_argument(
        "--contexts",
        default=None,
        help=f"comma-separated context lengths {what} (default {DEFAULT_CONTEXTS})",
    )
    p.add_argument(
        "--acceptance",
        default=None,
        help="acceptance per draft position: one rate (0.8) or a list (0.9,0.85,0.8); "
        "roofline default 0.8 (an assumption)",
    )


def grid_from_args(args: argparse.Namespace, engine: bool = False) -> ProfileGrid:
    bs_default = ENGINE_BATCH_SIZES if engine else DEFAULT_BATCH_SIZES
    cs_default = ENGINE_CONTEXTS if engine else DEFAULT_CONTEXTS
    bs = parse_int_list(args.batch_sizes or bs_default, "--batch-sizes", 1)
    cs = parse_int_list(args.contexts or cs_default, "--contexts", 1)
    ks = parse_int_list(args.ks or (ENGINE_KS if engine else DEFAULT_KS), "--ks", 0)
    return ProfileGrid(tuple(sorted(set(bs))), tuple(sorted(set(cs))), tuple(sorted({0, *ks})))


def roofline_from_args(args: argparse.Namespace) -> Profile:
    """A complete roofline Profile from the shared arguments."""
    from specsched.planner import (
        DraftKind,
        DraftSpec,
        resolve_hardware,
        resolve_model,
        roofline_profile,
    )

    hw, target = resolve_hardware(args.gpu), resolve_model(args.model or DEFAULT_MODEL)
    if args.drafter.lower() == "streaming":
        draft = DraftSpec(DraftKind.STREAMING, window=args.draft_window)
    else:
        draft = DraftSpec(DraftKind.MODEL, model=resolve_model(args.drafter))
    return roofline_profile(
        hw, target, draft, grid_from_args(args), parse_acceptance(args.acceptance)
    )


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


def add_engine_args(p: argparse.ArgumentParser) -> None:
    """Options of engine-backed profiling, shared with `specsched tune`."""
    g = p.add_argument_group("engine profiling (--engine; `specsched tune`)")
    add_drafter_args(g, with_drafter=False)
    g.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (default 1: safest on a shared machine)")
    g.add_argument("--dtype", default="float32", help="float32 (default), bfloat16, float16")
    g.add_argument("--device", default="cpu", help="cpu (default) or cuda[:N]")
    g.add_argument("--repeats", type=int, default=5,
                   help="timed steps per point and round (default 5)")
    g.add_argument("--warmup", type=int, default=2,
                   help="untimed decode steps before them (default 2)")
    g.add_argument("--rounds", type=int, default=3,
                   help="rounds interleaving the Ks of each batch x context, so a slow minute "
                   "of the machine hits every K alike (default 3)")
    g.add_argument("--acceptance-tokens", type=int, default=128,
                   help="tokens decoded per request for acceptance at each context (default 128)")
    g.add_argument("--acceptance-prompts", type=int, default=16,
                   help="requests (distinct texts) per context for acceptance, each measured "
                   "on its own: mean, spread and confidence interval (default 16)")
    g.add_argument("--prompts-file", default=None, metavar="FILE",
                   help="measure acceptance on this UTF-8 text (your traffic) instead of the "
                   "built-in corpus")
    g.add_argument("--resume", action="store_true",
                   help="continue an interrupted profile at --out (nothing measured is redone)")


def engine_config_from_args(args: argparse.Namespace) -> EngineProfileConfig:
    """`EngineProfileConfig` from the engine arguments (the roofline's --drafter is shared)."""
    from specsched.io import read_user_text
    from specsched.tune.engine_profile import EngineProfileConfig

    if args.prompts_file is not None:
        read_user_text(args.prompts_file, "prompts")  # fail now, not after the model loads
    return EngineProfileConfig(
        model=args.model or ENGINE_MODEL, speculative=speculative_from_args(args),
        dtype=args.dtype, device=args.device, threads=args.threads, repeats=args.repeats,
        warmup=args.warmup, rounds=args.rounds, acceptance_tokens=args.acceptance_tokens,
        acceptance_prompts=args.acceptance_prompts, prompts_file=args.prompts_file,
    )


def prepare_profile_out(out: Path, resume: bool, force: bool) -> None:
    """Refuse to mix with an existing profile unless --resume (continue) or --force (restart)."""
    from specsched.planner import progress_path

    side = progress_path(out)
    if not (out.exists() or side.exists()):
        return
    if force:
        out.unlink(missing_ok=True)
        side.unlink(missing_ok=True)
    elif not resume:
        raise UserError(f"{out} (or its .partial.jsonl) exists; pass --resume to continue it "
                        f"or --force to start over")


def run_engine_profile(args: argparse.Namespace, out: Path) -> Profile:
    """Resumable engine-backed profile with a progress bar: rerun with --resume to continue."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from specsched.tune.profile_run import profile_engine

    grid = grid_from_args(args, engine=True)
    cfg = engine_config_from_args(args)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=stdout_console()) as bar:
        task = bar.add_task("profiling (loading the model)", total=None)

        def progress(done: int, total: int, what: str) -> None:
            bar.update(task, completed=done, total=total, description=f"profiled {what}")

        return profile_engine(out, grid, cfg, progress=progress)


def _run_engine_profile(args: argparse.Namespace) -> Profile:
    if args.out is None:
        raise UserError("--out is required: the profile (and its resume file) go there")
    out = Path(args.out)
    prepare_profile_out(out, args.resume, args.force)
    return run_engine_profile(args, out)


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
        profile = _run_engine_profile(args)
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
