"""Walk the trial plan: run each trial on a backend and append it to the results file.

A measured trial and its warm-ups form a unit; `--resume` skips the units whose measured trial is
already in the file and reruns the others from their warm-ups (a warm-up is meaningless after a
restart), so a killed run continues exactly where the plan stood.

One writer per file: the run holds `results_lock` from before the file is created (or read for
`--resume`) to the end. A trial whose backend raises `TrialFailed` is written as a failed record
(its reason, no metrics) and the run goes on; it counts as done for `--resume`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specsched.bench.backends.base import Backend, TrialFailed, TrialResult, TrialSpec
from specsched.bench.canonical import experiment_hash, experiment_to_obj
from specsched.bench.dryrun import DryRun
from specsched.bench.experiment import Experiment
from specsched.bench.lock import results_lock
from specsched.bench.order import PlannedTrial, plan_trials
from specsched.bench.results import (
    ResultsWriter,
    create_results,
    read_results,
    truncate_corrupt_tail,
)
from specsched.bench.workload import request_shapes
from specsched.errors import UserError

# (finished units, total units, the trial that just finished)
ProgressFn = Callable[[int, int, PlannedTrial], None]


class OtherExperimentError(UserError):
    """Resuming a results file that another experiment wrote (nothing was changed)."""


@dataclass(frozen=True, slots=True)
class RunSummary:
    path: Path
    measured_done: int  # measured trials written by this invocation
    measured_skipped: int  # already in the file (resume)
    truncated_to: Path | None  # side file holding a dropped corrupt tail
    measured_failed: int = 0  # of measured_done: recorded as failed trials (no metrics)


def _units(plan: list[PlannedTrial]) -> list[list[PlannedTrial]]:
    units: list[list[PlannedTrial]] = []
    current: list[PlannedTrial] = []
    for p in plan:
        current.append(p)
        if not p.warmup:
            units.append(current)
            current = []
    return units


def prepare_results(exp: Experiment, dry: DryRun, out: Path, resume: bool,
                    truncate_tail: bool) -> tuple[set[str], Path | None]:
    """Create the file, or (resume) verify it belongs to this experiment. Returns done keys."""
    digest = experiment_hash(exp)
    if not resume:
        create_results(out, {
            "experiment_hash": digest, "experiment": experiment_to_obj(exp),
            "dry_run": dry.to_json(), "created": time.time(), "backend": exp.backend.value,
        })
        return set(), None
    if not out.exists():
        raise UserError(f"{out}: nothing to resume (no such file); run without --resume first")
    results = read_results(out, allow_corrupt_tail=truncate_tail)
    if results.experiment_hash != digest:  # before anything in the file is touched
        raise OtherExperimentError(
            f"{out}: written by experiment {results.experiment_hash}, but this experiment is "
            f"{digest} (arms, scenarios or schedules changed); use another --out"
        )
    side = None
    if results.corrupt_tail is not None:
        side = truncate_corrupt_tail(out, results.corrupt_tail)
    return {str(t["key"]) for t in results.trials if not t.get("warmup")}, side


def _measurement(result: TrialResult) -> dict[str, Any]:
    return {
        "failed": None, "metrics": result.metrics(),
        "requests": [r.to_json() for r in result.requests],
        "k_histogram": None if result.k_histogram is None
        else {str(k): v for k, v in sorted(result.k_histogram.items())},
        "extra": result.extra,
    }


def _failure(reason: str) -> dict[str, Any]:
    return {"failed": reason or "failed", "metrics": None, "requests": [], "k_histogram": None,
            "extra": {}}


def run_experiment(exp: Experiment, dry: DryRun, backend: Backend, out: Path, *,
                   resume: bool = False, truncate_tail: bool = False,
                   progress: ProgressFn | None = None) -> RunSummary:
    """Run every unit not yet in `out`, appending each trial as it finishes. Holds the writer
    lock of `out` throughout; another writer is a UserError before anything is read or written."""
    try:
        with results_lock(out):
            return _run_locked(exp, dry, backend, out, resume, truncate_tail, progress)
    finally:
        backend.close()


def _run_locked(exp: Experiment, dry: DryRun, backend: Backend, out: Path, resume: bool,
                truncate_tail: bool, progress: ProgressFn | None) -> RunSummary:
    done, side = prepare_results(exp, dry, out, resume, truncate_tail)
    digest = experiment_hash(exp)
    units = _units(plan_trials(exp))
    shapes = {s.name: request_shapes(s, exp.seed) for s in exp.scenarios}
    todo = [u for u in units if u[-1].key not in done]
    skipped = len(units) - len(todo)
    written = failed = 0
    with ResultsWriter(out) as writer:
        for n, unit in enumerate(todo):
            for p in unit:
                spec = TrialSpec(
                    arm=exp.arm(p.arm), scenario=exp.scenario(p.scenario),
                    shapes=shapes[p.scenario], replicate=p.replicate, position=p.position,
                    warmup=p.warmup, seed=p.seed,
                )
                started = time.time()
                try:
                    outcome = _measurement(backend.run_trial(spec))
                except TrialFailed as exc:
                    outcome = _failure(str(exc))
                writer.append({
                    "type": "trial", "key": p.key, "experiment_hash": digest, "seq": p.seq,
                    "scenario": p.scenario, "arm": p.arm, "replicate": p.replicate,
                    "position": p.position, "warmup": p.warmup,
                    "warmup_index": p.warmup_index, "seed": p.seed, "started_at": started,
                    **outcome,
                })
                if not p.warmup:
                    written += 1
                    if outcome["failed"] is not None:
                        failed += 1
                if progress is not None:
                    progress(skipped + n + (0 if p.warmup else 1), len(units), p)
    return RunSummary(out, written, skipped, side, failed)
