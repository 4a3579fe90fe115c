"""CLI: check / route / export outputs and one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from specsched.cli import main

EX = Path(__file__).resolve().parents[2] / "examples"
TWO_D = str(EX / "schedule_2d.json")


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_check_ok_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(capsys, "check", TWO_D)
    assert rc == 0 and "ctx 4097+" in out and "valid 5-item schedule" in out
    rc, out, _ = run_cli(capsys, "check", TWO_D, "--json")
    data = json.loads(out)
    assert rc == 0 and data["schedule"][0] == [1, 4, 1, 1024, 2] and data["warnings"] == []


def test_check_strict_and_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    gap = "[[1,2,3],[5,8,1]]"
    rc, out, _ = run_cli(capsys, "check", gap)
    assert rc == 0 and "warning: batch sizes 3-4" in out
    rc, _, _ = run_cli(capsys, "check", gap, "--strict")
    assert rc == 1
    rc, out, _ = run_cli(capsys, "check", "[[1,2,5],[3,8,1]]", "--max-k", "4", "--json")
    assert rc == 0 and json.loads(out)["warnings"][0]["code"] == "clamped"


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["check", "/nonexistent.json"], "no such file"),
        (["check", "[[1,2,3],[2,4,5]]"], "overlaps"),
        (["check", "[[1,2"], "invalid JSON"),
        (["route", TWO_D, "--ctx", "1,x"], "--ctx: item 1"),
        (["route", TWO_D, "--ctx", "1,-4"], "must be >= 0"),
        (["route", TWO_D, "--ctx", "1,2", "--prompt-lens", "3"], "--prompt-lens has 1"),
        (["route", TWO_D, "--ctx", "1", "--agg", "mode"], "invalid choice"),
        (["export", TWO_D, "--to", "tgi"], "invalid choice"),
        (["bogus"], "invalid choice"),
    ],
)
def test_errors_are_one_line_exit_2(argv: list[str], fragment: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "specsched", *argv], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and fragment in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_route_outputs(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(capsys, "route", TWO_D, "--ctx", "100,100,100,8000")
    assert rc == 0 and out.startswith("K=4")
    rc, out, _ = run_cli(
        capsys,
        "route",
        TWO_D,
        "--ctx",
        "100,100,100,8000",
        "--json",
        "--prompt-lens",
        "50,50,50,9000",
    )
    assert json.loads(out) == {
        "batch_size": 4,
        "pool": "decode",
        "ctx_repr": 100,
        "bucket": [1, 4, 1, 1024],
        "k": 2,
    }
    rc, out, _ = run_cli(capsys, "route", TWO_D, "--ctx", "100,5000", "--per-request", "--json")
    assert json.loads(out) == {"batch_size": 2, "k": [2, 5]}


def test_export(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(capsys, "export", TWO_D, "--to", "vllm", "--mode", "stock")
    assert rc == 0 and "no context axis" in err
    body = out.strip().split(" ", 1)[1].strip("'")
    cfg = json.loads(body)
    assert cfg["num_speculative_tokens_per_batch_size"] == [[1, 4, 2], [5, 16, 0], [17, 256, 0]]
    # default for a 2-D schedule: the complete flags for specsched's scheduler class
    rc, out, _ = run_cli(capsys, "export", TWO_D, "--to", "vllm")
    assert rc == 0 and "--scheduler-cls specsched.integrations.vllm.ContextAwareScheduler" in out
    assert "--additional-config" in out and "--max-num-seqs 256" in out
    rc, out, _ = run_cli(capsys, "export", str(EX / "schedule_batch_only.yaml"), "--to", "vllm")
    cfg = json.loads(out.strip().split(" ", 1)[1].strip("'"))
    assert cfg["num_speculative_tokens"] == 4
    assert cfg["num_speculative_tokens_per_batch_size"] == [[1, 4, 4], [5, 16, 2], [17, 256, 0]]
    rc, out, _ = run_cli(capsys, "export", TWO_D, "--to", "sglang", "--mode", "stock")
    assert json.loads(out)["17"] == {"candidate_steps": [0, 1, 3]}
    rc, out, _ = run_cli(capsys, "export", TWO_D, "--to", "sglang")  # SGLang PR #31716 form
    assert json.loads(out)["17"]["ctx_buckets"]["1-1024"] == {"candidate_steps": [0]}
