"""`specsched bench EXP [--dry-run [--json]] [--out results.jsonl [--resume]]`."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from specsched.cli._common import print_json, stdout_console
from specsched.errors import UserError


def register(sub: Any) -> None:
    p = sub.add_parser("bench", help="dry-run or run an experiment (arms x scenarios) to JSONL")
    p.add_argument("experiment", help="experiment file (YAML or JSON)")
    p.add_argument("--dry-run", action="store_true",
                   help="only classify: controls, bucket crossings, K values per scenario")
    p.add_argument("--json", action="store_true", help="with --dry-run: print JSON")
    p.add_argument("--out", type=Path, help="results file (JSONL), appended trial by trial")
    p.add_argument("--resume", action="store_true", help="continue an interrupted --out file")
    p.add_argument("--truncate-corrupt-tail", action="store_true",
                   help="with --resume: drop a cut-off last line (kept in a side file)")
    p.add_argument("--backend", choices=["engine", "openai", "simulated"],
                   help="override the experiment's backend (changes the experiment hash)")
    p.add_argument("--strict", action="store_true",
                   help="exit 3 when every arm is one configuration on some scenario")
    p.set_defaults(func=run)


def _warn(warnings: tuple[str, ...], loud: list[str]) -> None:
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    for w in warnings:
        style = "bold red" if w in loud else "yellow"
        err.print(f"[{style}]warning:[/] {w}", markup=True)


def _print_dry_run(dry: Any, exp: Any) -> None:
    con = stdout_console()
    for s in dry.scenarios:
        t = Table(title=f"scenario {s.name}: batch {s.batch_size}, {s.num_waves} wave(s)")
        t.add_column("arm")
        t.add_column("K values")
        t.add_column("control group")
        t.add_column("crossings (token@ctx: K)")
        for arm in exp.arms:
            group = s.control_group_of(arm.name)
            cross = [c for c in s.crossings if c.arm == arm.name]
            shown = ", ".join(f"{c.token}@{c.ctx}: {c.from_k}->{c.to_k}" for c in cross[:4])
            if len(cross) > 4:
                shown += f", ... ({len(cross)} in all)"
            t.add_row(arm.name, ",".join(map(str, s.k_values[arm.name])),
                      " = ".join(group) if len(group) > 1 else "-", shown or "-")
        con.print(t)


def run(args: argparse.Namespace) -> int:
    from specsched.bench.dryrun import dry_run
    from specsched.bench.experiment import BackendKind
    from specsched.bench.load import load_experiment

    exp = load_experiment(args.experiment)
    if args.backend:
        exp = dataclasses.replace(exp, backend=BackendKind(args.backend))
    dry = dry_run(exp)
    loud = [w for w in dry.warnings if "ALL" in w or "same configuration as the baseline" in w]
    if args.dry_run:
        if args.json:
            print_json(dry.to_json())
        else:
            _print_dry_run(dry, exp)
        _warn(dry.warnings, loud)
        any_all = any(s.all_controls for s in dry.scenarios)
        return 3 if args.strict and any_all else 0
    if args.out is None:
        raise UserError("bench: give --out results.jsonl to run, or --dry-run to classify only")
    if args.truncate_corrupt_tail and not args.resume:
        raise UserError("bench: --truncate-corrupt-tail only applies with --resume")
    _warn(dry.warnings, loud)
    if args.strict and any(s.all_controls for s in dry.scenarios):
        return 3
    return _run(exp, dry, args)


def _stop(bar: Any, erase: bool) -> None:
    if bar is not None:
        bar.live.transient = erase
        bar.stop()


def _run(exp: Any, dry: Any, args: argparse.Namespace) -> int:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from specsched.bench.backends import make_backend
    from specsched.bench.runner import run_experiment

    backend = make_backend(exp.backend, dict(exp.backend_options), results=args.out)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
    err = Console(stderr=True)
    # A live bar on a terminal only, erased on an error: a refused run (lock held, file exists,
    # folder impossible) leaves exactly its one `error:` line on stderr.
    bar = Progress(*columns, console=err, transient=False) if err.is_terminal else None
    task = None if bar is None else bar.add_task("trials", total=None)

    def progress(done: int, total: int, trial: Any) -> None:
        if bar is None or task is None:
            return
        what = f"{trial.scenario}/{trial.arm} r{trial.replicate}" + (
            " (warm-up)" if trial.warmup else "")
        bar.update(task, completed=done, total=total, description=what)

    if bar is not None:
        bar.start()
    try:
        summary = run_experiment(exp, dry, backend, args.out, resume=args.resume,
                                 truncate_tail=args.truncate_corrupt_tail, progress=progress)
    except KeyboardInterrupt:
        _stop(bar, erase=False)
        print(f"interrupted; continue with: specsched bench {args.experiment} "
              f"--out {args.out} --resume", file=sys.stderr)
        return 130
    except BaseException:
        _stop(bar, erase=True)
        raise
    _stop(bar, erase=False)
    if summary.truncated_to is not None:
        print(f"dropped a corrupt last line; its bytes are in {summary.truncated_to}",
              file=sys.stderr)
    if summary.measured_failed:
        print(f"warning: {summary.measured_failed} of {summary.measured_done} measured trials "
              f"failed (recorded as failed, excluded from the report)", file=sys.stderr)
    print(f"wrote {summary.measured_done} measured trials to {summary.path} "
          f"({summary.measured_skipped} already there); next: specsched report {summary.path}")
    return 0
