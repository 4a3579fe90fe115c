"""`specsched profile --engine` (and `specsched tune`): measure a profile on specsched's own engine,
resumably, with a progress bar.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from specsched.cli._common import stdout_console
from specsched.cli.profile_args import ENGINE_MODEL, grid_from_args
from specsched.cli.spec_flags import add_drafter_args, speculative_from_args
from specsched.errors import UserError
from specsched.planner import Profile

if TYPE_CHECKING:
    from specsched.tune.engine_profile import EngineProfileConfig


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
    g.add_argument("--acceptance-threads", type=int, default=None, metavar="N",
                   help="torch CPU threads of the acceptance decode: counts, never timed "
                   "(default: every core)")
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
        acceptance_threads=args.acceptance_threads,
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


def run_engine_mode(args: argparse.Namespace) -> Profile:
    """`profile --engine`: --out is required; an existing one needs --resume or --force."""
    if args.out is None:
        raise UserError("--out is required: the profile (and its resume file) go there")
    out = Path(args.out)
    prepare_profile_out(out, args.resume, args.force)
    return run_engine_profile(args, out)
