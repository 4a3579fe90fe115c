"""`specsched demo`: tune -> plan -> a balanced experiment -> report, in one output folder.

Steps (each resumable: rerunning continues where an interrupted demo stopped):
1. profile the engine on a small grid (`profile.json`, `tune.engine_profile`);
2. plan a 2-D and a batch-only schedule (`schedule_2d.json`, `schedule_batch_only.json`, plots);
3. write `experiment.yaml` (no-spec, best static K, batch-only, 2-D) and dry-run it: controls
   (arms that are one configuration on a scenario) and bucket crossings are shown *before*
   anything is measured;
4. run it on the engine backend (`results.jsonl`, balanced order, replicates);
5. analyze: `report/` (report.md with CIs and noise floors, PNGs) and the verdict rows
   (predicted vs measured speedup per scenario and arm; a win only beyond the noise floor).
One `LLM` serves the profile and the experiment (weights loaded once, prefix cache shared).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from specsched.bench.analysis import Analysis
from specsched.bench.dryrun import DryRun
from specsched.bench.experiment import Experiment
from specsched.bench.results import Results
from specsched.demo.config import MARKER, DemoConfig, Shape
from specsched.demo.experiment import BASELINE, resolved_scenarios, write_experiment
from specsched.errors import UserError
from specsched.io import atomic_write_json
from specsched.tune.pipeline import PlanSettings, TunePlans

if TYPE_CHECKING:
    from specsched.engine.llm import LLM
    from specsched.planner import Profile, ProfileGrid
    from specsched.tune.engine_profile import EngineProfileConfig

PROFILE = "profile.json"
EXPERIMENT = "experiment.yaml"
RESULTS = "results.jsonl"
REPORT = "report"
VERDICT = "verdict.json"
LEARNED = "learned_schedule.json"


def write_learned(path: Path, results: Results) -> None:
    """What the adaptive arm learned in its last measured trial, as a 5-item schedule that
    `specsched check` / `export` accept (deployable where no closed loop runs)."""
    learned = [t["extra"]["learned_schedule"] for t in results.trials
               if not t.get("warmup") and t.get("extra", {}).get("learned_schedule")]
    if learned:
        atomic_write_json(path, {"speculative_token_schedule": learned[-1]})


class DemoUI(Protocol):
    """What the demo shows while it runs (the CLI renders with rich; tests pass a silent one)."""

    def step(self, title: str) -> None: ...
    def profile_progress(self, done: int, total: int, what: str) -> None: ...
    def show_plans(self, plans: TunePlans) -> None: ...
    def show_dry_run(self, dry: DryRun, exp: Experiment) -> None: ...
    def bench_progress(self, done: int, total: int, what: str) -> None: ...


@dataclass(frozen=True, slots=True)
class DemoResult:
    out: Path
    plans: TunePlans
    dry: DryRun
    analysis: Analysis
    verdict: list[dict[str, Any]]
    notes: tuple[str, ...] = ()  # the verdict's notes after the prediction check


def prepare_out(out: Path, cfg: DemoConfig, force: bool) -> bool:
    """Create or reuse the folder; True when continuing an earlier demo. Never touches a folder
    the demo did not write."""
    marker = out / MARKER
    state = json.dumps(asdict(cfg), sort_keys=True)
    if out.exists() and any(out.iterdir()):
        if not marker.is_file():
            raise UserError(f"{out} exists and was not written by `specsched demo`; "
                            f"choose another --out (nothing was changed)")
        if force:
            shutil.rmtree(out)
        elif marker.read_text() != state:
            raise UserError(f"{out} holds a demo with other settings; pass --force to start "
                            f"over, or choose another --out")
        else:
            return True
    out.mkdir(parents=True, exist_ok=True)
    marker.write_text(state)
    return False


def _profile_args(cfg: DemoConfig) -> tuple[ProfileGrid, EngineProfileConfig]:
    from specsched.planner import ProfileGrid
    from specsched.tune.engine_profile import EngineProfileConfig

    grid = ProfileGrid(tuple(cfg.batch_sizes), tuple(cfg.contexts), tuple(cfg.ks))
    pcfg = EngineProfileConfig(
        model=cfg.model, speculative=cfg.speculative, dtype=cfg.dtype, threads=cfg.threads,
        repeats=cfg.repeats, warmup=cfg.warmup_steps, rounds=cfg.rounds,
        acceptance_tokens=cfg.acceptance_tokens,
        acceptance_prompts=cfg.acceptance_prompts, acceptance_tail=cfg.acceptance_tail,
        acceptance_documents=cfg.acceptance_documents,
        acceptance_tail_range=cfg.acceptance_tail_range,
    )
    return grid, pcfg


class _LazyLLM:
    """Loads the model only when a step needs it (a finished demo reruns its report instantly)."""

    def __init__(self, cfg: DemoConfig) -> None:
        self.cfg = cfg
        self.llm: LLM | None = None

    def get(self) -> LLM:
        if self.llm is None:
            from specsched.engine import LLM

            c = self.cfg
            self.llm = LLM(c.model, dtype=c.dtype, max_num_seqs=c.max_num_seqs,
                           max_model_len=c.max_model_len, max_num_batched_tokens=2048,
                           num_threads=c.threads)
        return self.llm


def _profile(out: Path, cfg: DemoConfig, lazy: _LazyLLM, ui: DemoUI) -> Profile:
    from specsched.tune.profile_run import profile_engine

    grid, pcfg = _profile_args(cfg)
    return profile_engine(out / PROFILE, grid, pcfg, lazy.get, ui.profile_progress)


def run_demo(out: Path, cfg: DemoConfig, ui: DemoUI, force: bool = False) -> DemoResult:
    """The whole demo (see module doc); resumable unless `force`."""
    from specsched.bench.analysis import Metric, analyze
    from specsched.bench.backends.engine import EngineBackend, EngineOptions
    from specsched.bench.dryrun import dry_run
    from specsched.bench.load import load_experiment
    from specsched.bench.report import write_report
    from specsched.bench.results import read_results
    from specsched.bench.runner import OtherExperimentError, run_experiment
    from specsched.tune.pipeline import plan_profile, write_tune_outputs

    resumed = prepare_out(out, cfg, force)
    ui.step(("continuing the demo in " if resumed else "demo in ") + str(out))
    lazy = _LazyLLM(cfg)
    ui.step("1/4 profile the engine (T_draft, T_verify, no-spec step, acceptance per context)")
    profile = _profile(out, cfg, lazy, ui)
    ui.step("2/4 plan: 2-D and batch-only schedules from the profile")
    plans = plan_profile(profile, PlanSettings(cfg.max_batch_ranges, cfg.max_ctx_ranges),
                         str(out / PROFILE))
    write_tune_outputs(plans, out)
    ui.show_plans(plans)
    ui.step("3/4 experiment: dry-run first (which arms are the same configuration where)")
    scenarios = resolved_scenarios(cfg, plans)
    write_experiment(out / EXPERIMENT, cfg, plans.best_static_k, scenarios)
    exp = load_experiment(out / EXPERIMENT)
    dry = dry_run(exp)
    ui.show_dry_run(dry, exp)
    ui.step("4/4 run the experiment on the engine (balanced order, replicates)")
    results_path = out / RESULTS
    backend = EngineBackend(EngineOptions.from_options(dict(exp.backend_options)))
    backend.llm = lazy.llm  # shared when the profile step loaded it; else loaded on first trial

    def progress(done: int, total: int, trial: Any) -> None:
        ui.bench_progress(done, total, f"{trial.scenario} / {trial.arm} rep {trial.replicate}")

    try:
        run_experiment(exp, dry, backend, results_path, resume=results_path.exists(),
                       truncate_tail=True, progress=progress)
    except OtherExperimentError:  # same demo settings, but specsched changed the experiment
        raise UserError(f"{out} holds trials of an earlier experiment (specsched or its "
                        f"settings changed since); pass --force to start over (make demo: "
                        f"remove {out}), or choose another --out") from None
    results = read_results(results_path)
    analysis = analyze(results)
    decode = analyze(results, Metric.DECODE_TOK_S)
    write_report(analysis, out / REPORT)
    rows = verdict_rows(exp, analysis, decode, dry, profile, cfg.shape is Shape.WAVE,
                        results.trials)
    from specsched.demo.verdict import append_verdict_md, profile_noise_note, write_verdict

    notes = profile_noise_note(profile.noisy_units())
    write_verdict(out / VERDICT, rows, analysis, notes)
    write_learned(out / LEARNED, results)
    append_verdict_md(out / REPORT / "report.md", rows, analysis, dry, notes)
    return DemoResult(out, plans, dry, analysis, rows, tuple(notes))


def verdict_rows(exp: Experiment, an: Analysis, decode: Analysis, dry: DryRun,
                 profile: Profile, waves: bool,
                 trials: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per scenario x arm: K used, predicted (simulated) and measured speedup vs no-spec — end to
    end (output tokens/s) and decode only — with 95% CIs, the verdict, and the model check: the
    speedup predicted again with the run's own acceptance (`demo.replay`, from `trials`)."""
    from specsched.demo.predict import BAND_QUANTILES, predicted
    from specsched.demo.replay import replayed

    preds = predicted(exp, profile, BASELINE, waves)
    bands = [predicted(exp, profile, BASELINE, waves, q) for q in BAND_QUANTILES]
    replay = replayed(exp, profile, trials, BASELINE, waves)
    decode_rows = {(s.name, r.arm): r for s in decode.scenarios for r in s.rows}
    rows: list[dict[str, Any]] = []
    for s in an.scenarios:
        ks = dry.scenario(s.name).k_values
        for r in s.rows:
            d = decode_rows.get((s.name, r.arm))
            rp = None if r.arm == BASELINE else replay.get((s.name, r.arm))
            rows.append({
                "scenario": s.name,
                "arm": r.arm,
                "k": list(ks.get(r.arm, ())),
                "predicted_speedup": _speedup(preds, s.name, r.arm, decode=False),
                "predicted_decode_speedup": _speedup(preds, s.name, r.arm, decode=True),
                "predicted_band": _band(bands, s.name, r.arm),
                "replayed_speedup": None if rp is None else rp.mean,
                "replayed_ci": None if rp is None else [rp.lo, rp.hi],
                "median_tok_s": r.summary.median,
                "n": r.summary.n,
                "ratio": None if r.ratio is None else r.ratio.ratio,
                "ci": None if r.ratio is None else [r.ratio.lo, r.ratio.hi],
                "decode_ratio": None if d is None or d.ratio is None else d.ratio.ratio,
                "decode_ci": None if d is None or d.ratio is None else [d.ratio.lo, d.ratio.hi],
                "verdict": "baseline" if r.arm == BASELINE else (
                    None if r.verdict is None else r.verdict.value),
                "same_config_as_baseline": r.same_config_as_baseline,
                "noise_floor": s.floor,
                "control_group": list(dry.scenario(s.name).control_group_of(r.arm)),
            })
    return rows


def _band(bands: list[dict[tuple[str, str], Any]], scenario: str, arm: str
          ) -> list[float] | None:
    ends = [_speedup(b, scenario, arm, decode=False) for b in bands]
    if any(e is None for e in ends):
        return None
    return sorted(e for e in ends if e is not None)


def _speedup(preds: dict[tuple[str, str], Any], scenario: str, arm: str,
             decode: bool) -> float | None:
    pred = preds.get((scenario, arm))
    if pred is None:
        return None
    return float((pred.decode_speedup if decode else pred.speedup).mean)
