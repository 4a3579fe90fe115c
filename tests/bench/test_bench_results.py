from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bench_helpers import make_exp

from specsched.bench.analysis import analyze
from specsched.bench.backends.simulated import SimConfig, SimulatedBackend
from specsched.bench.dryrun import dry_run
from specsched.bench.order import plan_trials
from specsched.bench.results import read_results, scan_lines
from specsched.bench.runner import run_experiment
from specsched.cli import main
from specsched.errors import UserError

EXP = {
    "name": "kill", "backend": "simulated", "replicates": 6, "warmup": 1, "seed": 5,
    "backend_options": {"sleep_s": 0.05},
    "arms": [{"name": "a", "k": 1}, {"name": "b", "k": 2}, {"name": "c", "k": 0}],
    "scenarios": [{"name": "s", "kind": "batch", "prompt_lens": [50, 60], "output_len": 8}],
}


def test_resume_after_sigkill_loses_nothing(tmp_path: Path) -> None:
    exp_path, out = tmp_path / "e.json", tmp_path / "r.jsonl"
    exp_path.write_text(json.dumps(EXP))
    cmd = [sys.executable, "-m", "specsched", "bench", str(exp_path), "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait for a few trials, then kill -9 mid-run
        if out.exists() and out.read_text().count("\n") >= 8:
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = read_results(out, allow_corrupt_tail=True)
    assert 0 < len([t for t in partial.trials if not t["warmup"]]) < 18
    rc = main(["bench", str(exp_path), "--out", str(out), "--resume", "--truncate-corrupt-tail"])
    assert rc == 0
    final = read_results(out)
    measured = [t["key"] for t in final.trials if not t["warmup"]]
    plan = [p.key for p in plan_trials(make_exp(**EXP)) if not p.warmup]
    assert sorted(measured) == sorted(plan)  # every planned trial once, none lost or doubled
    before = {t["key"]: t["metrics"] for t in partial.trials if not t["warmup"]}
    after = {t["key"]: t["metrics"] for t in final.trials if not t["warmup"]}
    assert all(after[k] == v for k, v in before.items())  # finished trials were kept, not rerun


def test_corrupt_tail_is_reported_with_line_number(tmp_path: Path) -> None:
    exp = make_exp(replicates=2, warmup=0)
    out = tmp_path / "r.jsonl"
    run_experiment(exp, dry_run(exp), SimulatedBackend(SimConfig()), out)
    n_lines = out.read_text().count("\n")
    with open(out, "a") as f:
        f.write('{"type": "trial", "key": "s|a|9')  # cut off mid-write
    with pytest.raises(UserError, match=f"line {n_lines + 1} is corrupt"):
        read_results(out)
    with pytest.raises(UserError, match="corrupt"):
        run_experiment(exp, dry_run(exp), SimulatedBackend(SimConfig()), out, resume=True)
    summary = run_experiment(exp, dry_run(exp), SimulatedBackend(SimConfig()), out, resume=True,
                             truncate_tail=True)
    assert summary.truncated_to is not None and summary.truncated_to.read_text().startswith('{"t')
    assert summary.measured_done == 0 and summary.measured_skipped == 4
    assert read_results(out).corrupt_tail is None


def test_invalid_json_in_the_middle_is_an_error() -> None:
    records, tail = scan_lines(b'{"a": 1}\n{"b": \n')
    assert tail is not None and tail.line_no == 2 and len(records) == 1
    with pytest.raises(UserError, match="line 1 is not valid JSON"):
        scan_lines(b'{"a": \n{"b": 1}\n')


def test_resume_refuses_another_experiment_and_run_refuses_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    exp = make_exp(replicates=2, warmup=0)
    run_experiment(exp, dry_run(exp), SimulatedBackend(SimConfig()), out)
    with pytest.raises(UserError, match="already exists"):
        run_experiment(exp, dry_run(exp), SimulatedBackend(SimConfig()), out)
    other = make_exp(replicates=3, warmup=0)
    with pytest.raises(UserError, match="written by experiment"):
        run_experiment(other, dry_run(other), SimulatedBackend(SimConfig()), out, resume=True)


def test_report_refuses_duplicate_trial_keys(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    exp = make_exp(replicates=2, warmup=1)
    out = tmp_path / "r.jsonl"
    run_experiment(exp, dry_run(exp), SimulatedBackend(SimConfig()), out)
    lines = out.read_text().splitlines()
    first_m = next(i for i, x in enumerate(lines) if '"warmup":false' in x)
    first_w = next(i for i, x in enumerate(lines) if '"warmup":true' in x)
    twin = json.loads(lines[first_m])
    twin["metrics"]["output_tok_s"] = 1e12  # the second writer's number must not be used
    with open(out, "a") as f:
        f.write(lines[first_w] + "\n")  # a repeated warm-up (as --resume writes) is fine
        f.write(json.dumps(twin) + "\n")
    n = len(lines) + 2
    res = read_results(out)
    assert [(d.key, d.line_nos) for d in res.duplicates] == [(twin["key"], (first_m + 1, n))]
    assert sorted(t["key"] for t in res.trials if not t["warmup"]) == sorted(
        p.key for p in plan_trials(exp) if not p.warmup)
    with pytest.raises(UserError, match="appears on lines"):
        analyze(res)
    assert main(["report", str(out), "--no-charts"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert twin["key"] in err and f"lines {first_m + 1}, {n}" in err and str(out) in err
    assert main(["report", str(out), "--no-charts", "--allow-duplicates", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert any("kept the first record" in w for w in summary["warnings"])
    assert all(a["median"] < 1e9 for s in summary["scenarios"] for a in s["arms"])
