"""`specsched bench`: experiments that cannot silently compare a configuration with itself.

experiment/load (what to run) -> dryrun (controls, crossings, K values; no torch) -> order (balanced
plan) -> runner + backends (trials to JSONL via results) -> analysis/stats (CIs, noise floor,
verdicts) -> report/charts. The statistics and dry-run import no torch.
"""

from __future__ import annotations

from specsched.bench.analysis import Analysis, Metric, analyze
from specsched.bench.canonical import experiment_hash, experiment_to_obj
from specsched.bench.dryrun import Crossing, DryRun, ScenarioDryRun, dry_run, wave_k_runs
from specsched.bench.experiment import (
    Arm,
    BackendKind,
    Experiment,
    Sampling,
    Scenario,
    ScenarioKind,
    ServerSpec,
)
from specsched.bench.load import experiment_from_obj, load_experiment
from specsched.bench.order import PlannedTrial, arm_orders, plan_trials, williams_square
from specsched.bench.results import Results, read_results
from specsched.bench.runner import RunSummary, run_experiment
from specsched.bench.stats import Verdict
from specsched.bench.workload import request_shapes
from specsched.corpus import RequestShape, build_prompts

__all__ = [
    "Analysis", "Arm", "BackendKind", "Crossing", "DryRun", "Experiment", "Metric",
    "PlannedTrial", "RequestShape", "Results", "RunSummary", "Sampling", "Scenario",
    "ScenarioDryRun", "ScenarioKind", "ServerSpec", "Verdict", "analyze", "arm_orders",
    "build_prompts", "dry_run", "experiment_from_obj", "experiment_hash", "experiment_to_obj",
    "load_experiment", "plan_trials", "read_results", "request_shapes", "run_experiment",
    "wave_k_runs", "williams_square",
]
