from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest
from bench_helpers import STUB, free_port, make_exp

from specsched.bench.analysis import analyze
from specsched.bench.backends import make_backend
from specsched.bench.backends.base import TrialSpec
from specsched.bench.backends.openai import OpenAIBackend, OpenAIConfig, PromptTokenizer
from specsched.bench.backends.server import check_loopback
from specsched.bench.dryrun import dry_run
from specsched.bench.results import read_results
from specsched.bench.runner import run_experiment
from specsched.bench.workload import request_shapes
from specsched.errors import UserError


def _trial(exp, arm: str = "a") -> TrialSpec:  # type: ignore[no-untyped-def]
    sc = exp.scenarios[0]
    return TrialSpec(exp.arm(arm), sc, request_shapes(sc, exp.seed), 0, 0, False, 42)


def test_streams_and_measures_against_a_stub_server(stub_module: ModuleType) -> None:
    port = free_port()
    server = stub_module.serve(port)
    try:
        exp = make_exp()
        backend = OpenAIBackend(OpenAIConfig(base_url=f"http://127.0.0.1:{port}"))
        res = backend.run_trial(_trial(exp))
        assert [r.num_output_tokens for r in res.requests] == [16, 16]
        assert [r.num_prompt_tokens for r in res.requests] == [100, 200]  # words, from usage
        assert all(0 < r.ttft_s <= r.latency_s <= res.wall_s for r in res.requests)
        assert all(len(r.itl_s) == 15 for r in res.requests)
        m = res.metrics()
        assert m["num_output_tokens"] == 32 and m["output_tok_s"] > 0
        body = server.RequestHandlerClass.seen[-1]
        assert body["stream"] and body["max_tokens"] == 16 and body["model"] == "stub-model"
        assert body["ignore_eos"] and body["temperature"] == 0.0
        # server tokenizer: exact token-id prompts
        backend = OpenAIBackend(OpenAIConfig(base_url=f"http://127.0.0.1:{port}",
                                             tokenizer=PromptTokenizer.SERVER))
        res = backend.run_trial(_trial(exp))
        assert sorted(len(b["prompt"]) for b in server.RequestHandlerClass.seen[-2:]) == [100, 200]
    finally:
        server.shutdown()


def test_harness_starts_waits_for_and_stops_each_arms_server(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = {"base_url": url, "ready_timeout_s": 30,
              "command": [sys.executable, str(STUB), str(port), "--delay-ready", "0.5"]}
    exp = make_exp(backend="openai", replicates=2, warmup=1,
                   arms=[{"name": "a", "k": 2, "server": server},
                         {"name": "b", "k": 3, "server": server}])
    out = tmp_path / "runs" / "r.jsonl"
    backend = make_backend(exp.backend, dict(exp.backend_options), results=out)
    summary = run_experiment(exp, dry_run(exp), backend, out)
    assert summary.measured_done == 4
    logs = tmp_path / "runs" / "r-server-logs"  # default: beside the results file
    assert (logs / "a.log").exists() and (logs / "b.log").exists()
    from specsched.bench.backends.server import is_ready

    assert not is_ready(url, timeout_s=0.5)  # stopped at the end
    an = analyze(read_results(out))
    assert {r.arm for r in an.scenarios[0].rows} == {"a", "b"}


def test_dead_server_and_remote_hosts_are_user_errors(tmp_path: Path) -> None:
    port = free_port()
    dead = [sys.executable, "-c", "raise SystemExit(3)"]
    exp = make_exp(backend="openai", arms=[{"name": "a", "k": 1, "server": {
        "base_url": f"http://127.0.0.1:{port}", "command": dead}}])
    backend = OpenAIBackend(OpenAIConfig(log_dir=str(tmp_path)))
    with pytest.raises(UserError, match="exited with code 3"):
        backend.run_trial(_trial(exp))
    with pytest.raises(UserError, match="not loopback"):
        check_loopback("http://10.0.0.1:8000", allow_remote=False)
    with pytest.raises(UserError, match="no server answers"):
        OpenAIBackend(OpenAIConfig(base_url=f"http://127.0.0.1:{port}")).run_trial(
            _trial(make_exp()))
