"""`specsched demo`: the main job on the embedded SmolLM2 default, in one command.

    specsched demo                 # -> demo-out/ (profile, schedules, plots, experiment, report)
    specsched demo --quick         # smaller grid, fewer replicates (a few minutes)
    specsched demo --out DIR --force

Tune (profile + plan a 2-D and a batch-only schedule), show the dry-run of the experiment
(which arms are the same configuration on which scenario), run it (no-spec vs best static K vs
batch-only vs 2-D at a short and a long context), and end with the verdict table. Rerunning
continues an interrupted demo; a folder the demo did not write is never touched.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import Any

from specsched.cli._common import stdout_console
from specsched.demo.config import Shape
from specsched.errors import UserError


def register(sub: Any) -> None:
    p = sub.add_parser("demo", help="tune + plan + balanced experiment + report (the main job)")
    p.add_argument("--out", type=Path, default=Path("demo-out"),
                   help="output folder (default demo-out/)")
    p.add_argument("--force", action="store_true",
                   help="start over in a folder an earlier demo wrote")
    p.add_argument("--quick", action="store_true",
                   help="smaller grid and contexts, 2 replicates (a few minutes)")
    p.add_argument("--model", default="smollm2-135m",
                   help="smollm2-135m (default), a .gguf file or a HF directory")
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (default 1: safest on a shared machine)")
    p.add_argument("--batch-size", type=int, default=None,
                   help="run the scenarios at this profiled batch size (default: the one where "
                   "the plans differ most)")
    p.add_argument("--shape", choices=[s.value for s in Shape], default=Shape.SERVING.value,
                   help="serving (default): continuous batching, 2 requests per slot, mixed "
                   "prompt lengths, new text every replicate; wave: one wave of B requests of one "
                   "text, no refill (the earlier demos' workload)")
    p.set_defaults(func=run)


class RichUI:
    """Progress bars and tables for the demo steps."""

    def __init__(self) -> None:
        self.console = stdout_console()
        self._bar: Any = None
        self._task: Any = None
        self.started = time.perf_counter()

    def _stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def _progress(self, done: int, total: int, what: str) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        if self._bar is None:
            self._bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"),
                                 TimeRemainingColumn(), console=self.console)
            self._bar.start()
            self._task = self._bar.add_task(what, total=total)
        self._bar.update(self._task, completed=done, total=total, description=what)

    def step(self, title: str) -> None:
        self._stop()
        elapsed = time.perf_counter() - self.started
        self.console.rule(f"[bold]{title}[/]  [dim]({elapsed:.0f} s)[/]")

    def profile_progress(self, done: int, total: int, what: str) -> None:
        self._progress(done, total, f"profiled {what}")

    def bench_progress(self, done: int, total: int, what: str) -> None:
        self._progress(done, total, what)

    def show_plans(self, plans: Any) -> None:
        from specsched.cli.tune import render_tune

        render_tune(plans)

    def show_dry_run(self, dry: Any, exp: Any) -> None:
        from rich.table import Table

        for s in dry.scenarios:
            t = Table(title=f"dry-run {s.name}: batch {s.batch_size}")
            for col in ("arm", "K at every token", "same configuration as", "crossings"):
                t.add_column(col)
            for arm in exp.arms:
                group = [a for a in s.control_group_of(arm.name) if a != arm.name]
                cross = [c for c in s.crossings if c.arm == arm.name]
                t.add_row(arm.name, ",".join(map(str, s.k_values[arm.name])),
                          ", ".join(group) or "-",
                          ", ".join(f"token {c.token}: K {c.from_k}->{c.to_k}" for c in cross)
                          or "-")
            self.console.print(t)
        for w in dry.warnings:
            self.console.print(f"[yellow]dry-run:[/] {w}")

    def finish(self) -> None:
        self._stop()


def _ratio(ratio: float | None, ci: list[float] | None) -> str:
    if ratio is None or ci is None:
        return "n/a"
    return f"x{ratio:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def render_verdict(result: Any, console: Any) -> None:
    from rich.table import Table

    from specsched.demo.verdict import conclusions, prediction_error

    t = Table(title="verdict: speedup vs no-spec, predicted (simulated) vs measured; end to end "
              "(output tokens/s) and decode only")
    for col in ("scenario", "arm", "K", "predicted [band]", "measured e2e [95% CI]",
                "pred/meas-1 (run's acc.)", "decode [95% CI]", "tok/s", "verdict"):
        t.add_column(col, justify="left" if col in ("scenario", "arm", "verdict") else "right")
    for r in result.verdict:
        pred = "n/a" if r["predicted_speedup"] is None else f"x{r['predicted_speedup']:.2f}"
        band = r.get("predicted_band")
        if band is not None and r["verdict"] != "baseline":
            pred += f" [{band[0]:.2f}, {band[1]:.2f}]"
        err, rerr = prediction_error(r), prediction_error(r, "replayed_speedup")
        errs = "" if err is None else f"{100 * err:+.1f}%" + (
            "" if rerr is None else f" ({100 * rerr:+.1f}%)")
        if r["verdict"] == "baseline":
            meas = dec = "x1 (baseline)"
        else:
            meas = _ratio(r["ratio"], r["ci"])
            dec = _ratio(r["decode_ratio"], r["decode_ci"])
        verdict = r["verdict"] or ""
        style = {"win": "green", "loss": "red"}.get(verdict, "")
        if r["same_config_as_baseline"]:
            verdict += " (same config)"
        t.add_row(r["scenario"], r["arm"], ",".join(map(str, r["k"])), pred, meas,
                  errs, dec,
                  f"{r['median_tok_s']:.1f}", f"[{style}]{verdict}[/]" if style else verdict)
    console.print(t)
    for line in conclusions(result.verdict, result.analysis, result.notes):
        console.print(line)


def run(args: argparse.Namespace) -> int:
    from specsched.demo.config import DemoConfig, quick_config
    from specsched.demo.pipeline import REPORT, run_demo

    cfg = (quick_config(args.model, args.threads) if args.quick
           else DemoConfig(model=args.model, threads=args.threads))
    cfg = dataclasses.replace(cfg, shape=Shape(args.shape))
    if args.batch_size is not None:
        if args.batch_size not in cfg.batch_sizes:
            raise UserError(f"--batch-size {args.batch_size}: the demo profiles batch sizes "
                            f"{', '.join(map(str, cfg.batch_sizes))}; pick one of them")
        cfg = dataclasses.replace(cfg, scenarios=tuple(
            dataclasses.replace(s, batch_size=args.batch_size) for s in cfg.scenarios))
    ui = RichUI()
    try:
        result = run_demo(args.out, cfg, ui, force=args.force)
    finally:
        ui.finish()
    ui.step("verdict")
    render_verdict(result, ui.console)
    elapsed = time.perf_counter() - ui.started
    ui.console.print(f"report: {args.out / REPORT / 'report.md'}  (demo took {elapsed:.0f} s; "
                     f"files in {args.out}/)")
    return 0
