"""A server that lies (malformed JSON, absurd or negative usage, wrong types) yields failed trials,
recorded as such and excluded from the report, never a number and never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from bench_helpers import free_port, load_stub, make_exp

from specsched.bench.analysis import analysis_to_json, analyze
from specsched.bench.backends import make_backend
from specsched.bench.backends.base import TrialFailed
from specsched.bench.backends.openai import OpenAIBackend, OpenAIConfig
from specsched.bench.backends.replies import PROMPT_SLACK, ReplyLimits, checked_counts
from specsched.bench.dryrun import dry_run
from specsched.bench.experiment import BackendKind, Experiment
from specsched.bench.results import read_results
from specsched.bench.runner import RunSummary, run_experiment
from specsched.errors import UserError

LIES = load_stub().LIES


def _openai_exp(port: int, warmup: int = 1) -> Experiment:
    return make_exp(backend="openai", replicates=2, warmup=warmup,
                    backend_options={"base_url": f"http://127.0.0.1:{port}"})


def _run(exp: Experiment, out: Path) -> RunSummary:
    backend = make_backend(exp.backend, dict(exp.backend_options), results=out)
    return run_experiment(exp, dry_run(exp), backend, out)


@pytest.mark.parametrize("lie", LIES)
def test_each_lie_is_a_failed_trial(lie: str, tmp_path: Path, stub_module: ModuleType) -> None:
    port = free_port()
    server = stub_module.serve(port, lie=lie)
    out = tmp_path / "r.jsonl"
    try:
        summary = _run(_openai_exp(port), out)
    finally:
        server.shutdown()
    assert (summary.measured_done, summary.measured_failed) == (4, 4)
    res = read_results(out)
    assert len(res.trials) == 8  # warm-ups too, each recorded as failed
    for t in res.trials:
        assert t["failed"].startswith("bad server reply: ") and "\n" not in t["failed"]
        assert t["metrics"] is None and t["requests"] == []
    an = analyze(res)
    assert an.scenarios == () and an.values == {}  # no number came from a lie
    assert any("4 failed trial(s) excluded (a: 2, b: 2)" in w for w in an.warnings)
    assert any("every measured trial so far failed" in w for w in an.warnings)


def test_some_failed_trials_are_counted_per_arm(tmp_path: Path, stub_module: ModuleType) -> None:
    port = free_port()
    server = stub_module.serve(port, lie="huge-usage", lie_first=1)  # only the first request lies
    out = tmp_path / "r.jsonl"
    try:
        summary = _run(_openai_exp(port, warmup=0), out)
    finally:
        server.shutdown()
    assert (summary.measured_done, summary.measured_failed) == (4, 1)
    failed = [t for t in read_results(out).trials if t["failed"]]
    assert len(failed) == 1 and "completion_tokens=1000000000" in failed[0]["failed"]
    an = analyze(read_results(out))
    rows = {r.arm: r for r in an.scenarios[0].rows}
    bad = failed[0]["arm"]
    assert rows[bad].failed == 1 and rows[bad].summary.n == 1
    assert sum(r.failed for r in rows.values()) == 1
    assert sum(r.summary.n for r in rows.values()) == 3
    assert all(v < 1e6 for vals in an.values.values() for v in vals)  # tokens/s stays sane
    arms = analysis_to_json(an)["scenarios"][0]["arms"]
    assert {a["arm"]: a["failed"] for a in arms}[bad] == 1


def test_cli_bench_and_report_on_a_lying_server(tmp_path: Path, stub_module: ModuleType) -> None:
    port = free_port()
    server = stub_module.serve(port, lie="malformed-json")
    exp, out = tmp_path / "e.json", tmp_path / "res" / "r.jsonl"
    exp.write_text(json.dumps({
        "name": "liar", "backend": "openai", "replicates": 2, "warmup": 0,
        "backend_options": {"base_url": f"http://127.0.0.1:{port}"},
        "arms": [{"name": "a", "k": 1}, {"name": "b", "k": 2}],
        "scenarios": [{"name": "s", "kind": "batch", "prompt_lens": [20], "output_len": 4}]}))
    cli = [sys.executable, "-m", "specsched"]
    try:
        r = subprocess.run([*cli, "bench", str(exp), "--out", str(out)], capture_output=True,
                           text=True, timeout=300)
    finally:
        server.shutdown()
    assert r.returncode == 0 and "Traceback" not in r.stderr
    assert "warning: 4 of 4 measured trials failed" in r.stderr
    r = subprocess.run([*cli, "report", str(out), "--no-charts"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "Traceback" not in r.stderr + r.stdout
    assert "4 failed trial(s) excluded" in r.stdout


def test_setup_replies_are_checked_too(tmp_path: Path, stub_module: ModuleType) -> None:
    port = free_port()
    server = stub_module.serve(port, lie="bad-models")
    try:
        with pytest.raises(UserError, match="lists no model"):
            _run(_openai_exp(port), tmp_path / "r.jsonl")
    finally:
        server.shutdown()


def test_server_logs_default_beside_the_results_file(tmp_path: Path) -> None:
    out = tmp_path / "runs" / "r.jsonl"
    assert OpenAIConfig.from_options({}, results=out).log_dir == str(tmp_path / "runs" /
                                                                     "r-server-logs")
    assert OpenAIConfig.from_options({"log_dir": "x"}, results=out).log_dir == "x"
    backend = make_backend(BackendKind.OPENAI, {}, results=out)
    assert isinstance(backend, OpenAIBackend)
    assert Path(backend.config.log_dir).parent == out.parent


@pytest.mark.parametrize(("usage", "chunks", "limits", "ok"), [
    ({"prompt_tokens": 20, "completion_tokens": 4}, 4, ReplyLimits(20, 4, True), True),
    ({"prompt_tokens": 20 + PROMPT_SLACK, "completion_tokens": 4}, 4, ReplyLimits(20, 4, True),
     True),
    ({"prompt_tokens": 19, "completion_tokens": 4}, 4, ReplyLimits(20, 4, True), False),
    ({"prompt_tokens": 26, "completion_tokens": 4}, 4, ReplyLimits(20, 4, False), True),  # words
    ({"prompt_tokens": 10**9, "completion_tokens": 4}, 4, ReplyLimits(20, 4, False), False),
    ({"prompt_tokens": 20, "completion_tokens": 5}, 4, ReplyLimits(20, 4, True), False),
    ({"prompt_tokens": 20, "completion_tokens": 3}, 4, ReplyLimits(20, 4, True), False),
    ({"prompt_tokens": 20, "completion_tokens": True}, 1, ReplyLimits(20, 4, True), False),
    ({"completion_tokens": 2}, 1, ReplyLimits(20, 4, True), True),  # prompt count: as sent
    (None, 5, ReplyLimits(20, 4, True), False),  # more text chunks than max_tokens
])
def test_reply_rules(usage: dict[str, object] | None, chunks: int, limits: ReplyLimits,
                     ok: bool) -> None:
    if ok:
        prompt, output = checked_counts(usage, chunks, limits)
        assert 0 <= output <= limits.max_tokens and prompt >= 0
    else:
        with pytest.raises(TrialFailed, match="bad server reply"):
            checked_counts(usage, chunks, limits)
