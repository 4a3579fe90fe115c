from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from specsched.cli import main

EXAMPLE = Path(__file__).parents[2] / "examples" / "experiments" / "upstream_pitfalls.yaml"


def test_dry_run_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", str(EXAMPLE), "--dry-run", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    s = {x["name"]: x for x in out["scenarios"]}
    assert s["short-batch"]["controls"] == [["batch-only", "2d-ctx", "2d-near-boundary"]]
    assert s["near-boundary"]["crossings"][0]["token"] == 14


def test_strict_exit_code_when_all_arms_are_controls(tmp_path: Path) -> None:
    exp = tmp_path / "e.json"
    exp.write_text(json.dumps({
        "arms": [{"name": "a", "k": 2}, {"name": "b", "schedule": [[1, 8, 2]]}],
        "scenarios": [{"name": "s", "kind": "batch", "prompt_lens": [5], "output_len": 2}]}))
    assert main(["bench", str(exp), "--dry-run", "--strict"]) == 3


def test_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    exp = tmp_path / "e.yaml"
    exp.write_text("arms: []\nscenarios: []\n")
    r = subprocess.run([sys.executable, "-m", "specsched", "bench", str(exp), "--dry-run"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and r.stderr.count("\n") == 1
    r = subprocess.run([sys.executable, "-m", "specsched", "bench", str(EXAMPLE), "--dry-run",
                        "--backend", "engine", "--out", "x"], capture_output=True, text=True)
    assert r.returncode == 0  # dry-run needs no backend


def test_run_then_report_writes_markdown_and_charts(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.jsonl"
    assert main(["bench", str(EXAMPLE), "--out", str(out)]) == 0
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "same config as baseline" in md and "Noise floor" in md
    assert (tmp_path / "rep" / "ratio_vs_baseline.png").stat().st_size > 1000
    summary = json.loads((tmp_path / "rep" / "summary.json").read_text())
    assert summary["baseline"] == "batch-only"


def test_statistics_and_dry_run_import_no_torch() -> None:
    code = ("import sys, specsched.bench, specsched.bench.stats, specsched.bench.dryrun, "
            "specsched.bench.analysis, specsched.bench.backends.openai, "
            "specsched.bench.backends.simulated; assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_run_and_report_with_a_scenario_of_more_replicates(tmp_path: Path) -> None:
    scen = {"kind": "batch", "prompt_lens": [5, 9], "output_len": 4}
    exp = tmp_path / "e.json"
    exp.write_text(json.dumps({
        "backend": "simulated", "replicates": 2, "warmup": 0, "baseline": "a",
        "arms": [{"name": "a", "k": 0}, {"name": "b", "k": 2}],
        "scenarios": [{"name": "s", **scen}, {"name": "t", "replicates": 4, **scen}]}))
    out = tmp_path / "r.jsonl"
    assert main(["bench", str(exp), "--out", str(out)]) == 0
    trials = [json.loads(x) for x in out.read_text().splitlines()]
    reps = {(t["scenario"], t["arm"]): 0 for t in trials if t.get("type") == "trial"}
    for t in trials:
        if t.get("type") == "trial":
            reps[(t["scenario"], t["arm"])] += 1
    assert reps == {("s", "a"): 2, ("s", "b"): 2, ("t", "a"): 4, ("t", "b"): 4}
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 0
    summary = json.loads((tmp_path / "rep" / "summary.json").read_text())
    n = {(sc["name"], a["arm"]): a["n"] for sc in summary["scenarios"] for a in sc["arms"]}
    assert n == reps  # each scenario's statistics over its own replicates
    paired = {sc["name"]: sc["arms"][1]["vs_baseline"]["n"] for sc in summary["scenarios"]}
    assert paired == {"s": 2, "t": 4}
