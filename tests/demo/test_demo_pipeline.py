"""`specsched demo` pipeline in a tiny configuration (tiny random model, minuscule grid): every
output exists and parses, a rerun resumes instead of redoing, foreign folders are never touched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specsched.bench.load import load_experiment
from specsched.bench.results import read_results
from specsched.cli import main
from specsched.demo.config import MARKER, DemoConfig, DemoScenario
from specsched.demo.pipeline import run_demo
from specsched.engine.spec.config import SpeculativeConfig
from specsched.errors import UserError
from specsched.planner import load_profile
from specsched.schedule import load_schedule


class SilentUI:
    def __init__(self) -> None:
        self.steps: list[str] = []
        self.dry_runs = 0

    def step(self, title: str) -> None:
        self.steps.append(title)

    def profile_progress(self, done: int, total: int, what: str) -> None:
        assert 0 < done <= total

    def show_plans(self, plans: Any) -> None:
        assert plans.rows()

    def show_dry_run(self, dry: Any, exp: Any) -> None:
        self.dry_runs += 1
        assert {s.name.split("-B")[0] for s in dry.scenarios} == {"short-ctx24", "long-ctx96"}

    def bench_progress(self, done: int, total: int, what: str) -> None:
        assert done <= total


@pytest.fixture(scope="module")
def config(sharp_tiny_model: Path) -> DemoConfig:
    model = sharp_tiny_model
    return DemoConfig(
        model=str(model), speculative=SpeculativeConfig(window=8), batch_sizes=(1, 2),
        contexts=(24, 96), ks=(0, 1, 2),
        repeats=2, warmup_steps=1, acceptance_tokens=10,
        scenarios=(DemoScenario("short", 24, 6, suffix_len=8),
                   DemoScenario("long", 96, 6, suffix_len=8)),
        replicates=2,
    )


def test_demo_outputs_exist_and_parse(config: DemoConfig, tmp_path: Path) -> None:
    out = tmp_path / "demo-out"
    ui = SilentUI()
    result = run_demo(out, config, ui)
    assert ui.dry_runs == 1 and any("dry-run" in s for s in ui.steps)
    assert load_profile(out / "profile.json").missing_points() == []
    assert load_schedule(str(out / "schedule_2d.json")) is not None
    assert load_schedule(str(out / "schedule_batch_only.json")).is_batch_only
    exp = load_experiment(out / "experiment.yaml")
    assert exp.arms[0].name == "no-spec" and exp.baseline == "no-spec"
    assert {a.name for a in exp.arms} >= {"batch-only", "2-D", "adaptive"}
    assert exp.arm("adaptive").policy.is_adaptive
    learned = load_schedule(str(out / "learned_schedule.json"))  # what the adaptive arm learned
    assert learned.arity == 5
    res = read_results(out / "results.jsonl")
    measured = [t for t in res.trials if not t["warmup"]]
    assert len(measured) == 2 * 2 * 5  # replicates x scenarios x arms
    for name in ("k_heatmap_2d.png", "speedup_2d.png", "report/report.md"):
        assert (out / name).stat().st_size > 0
    assert any(p.suffix == ".png" for p in (out / "report").iterdir())
    md = (out / "report" / "report.md").read_text()
    assert "Demo verdict" in md and "noise floor" in md
    verdict = json.loads((out / "verdict.json").read_text())
    assert len(verdict["rows"]) == 2 * 5 and len(verdict["conclusions"]) >= 2
    assert all(r["predicted_speedup"] is not None for r in verdict["rows"])
    for r in verdict["rows"]:  # the band the profile's acceptance sample allows
        lo, hi = r["predicted_band"]
        assert lo <= hi and (r["arm"] != "no-spec" or lo == hi == 1.0)
    assert any(c.startswith("predictions: mean |pred/meas - 1|") for c in verdict["conclusions"])
    # the model check: every non-baseline arm predicted again with the run's own acceptance
    for r in verdict["rows"]:
        if r["arm"] != "no-spec":
            lo, hi = r["replayed_ci"]
            assert r["replayed_speedup"] > 0 and lo <= r["replayed_speedup"] <= hi
    assert any("Model check" in c for c in verdict["conclusions"])
    assert "with the run's acceptance" in md
    assert "pred/meas - 1" in md
    assert all(r["decode_ratio"] is not None for r in verdict["rows"] if r["arm"] != "no-spec")
    for row in result.verdict:
        if row["verdict"] == "win":  # a claimed win clears the noise floor with its whole CI
            assert row["ci"][0] > 1 + row["noise_floor"]
    # a rerun continues the finished demo: nothing is measured again
    again = run_demo(out, config, SilentUI())
    assert len(read_results(out / "results.jsonl").trials) == len(res.trials)
    assert [r["arm"] for r in again.verdict] == [r["arm"] for r in result.verdict]


def test_demo_never_touches_a_foreign_folder(config: DemoConfig, tmp_path: Path,
                                             capsys: Any) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(UserError, match="not written by `specsched demo`"):
        run_demo(out, config, SilentUI(), force=True)
    assert main(["demo", "--out", str(out), "--force"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert (out / "notes.txt").read_text() == "keep me" and not (out / MARKER).exists()


def test_demo_with_other_settings_needs_force(config: DemoConfig, tmp_path: Path) -> None:
    out = tmp_path / "d"
    out.mkdir()
    (out / MARKER).write_text("{}")
    (out / "profile.json").write_text("{}")
    with pytest.raises(UserError, match="other settings"):
        run_demo(out, config, SilentUI())


def test_demo_after_an_upgrade_names_the_earlier_experiment(config: DemoConfig,
                                                             tmp_path: Path) -> None:
    """Same demo settings, another experiment (specsched changed the arms or the policy's
    settings): the demo refuses to mix the trials, says how to start over, changes nothing."""
    out = tmp_path / "d"
    run_demo(out, config, SilentUI())
    results = out / "results.jsonl"
    lines = results.read_text().splitlines()
    header = json.loads(lines[0])
    header["experiment_hash"] = "0" * 16
    tampered = "\n".join([json.dumps(header), *lines[1:]]) + "\n"
    results.write_text(tampered)
    with pytest.raises(UserError, match=r"earlier experiment.*--force"):
        run_demo(out, config, SilentUI())
    assert results.read_text() == tampered
