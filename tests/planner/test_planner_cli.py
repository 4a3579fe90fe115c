"""`specsched plan` / `specsched profile` end to end (in-process)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specsched.cli import main
from specsched.schedule import load_schedule

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "profiles"


def test_plan_roofline_writes_valid_schedule_and_plots(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "schedule.json"
    rc = main(
        [
            "plan",
            "--roofline",
            "--gpu",
            "H100-SXM",
            "--model",
            "llama-3.1-8b",
            "--batch-sizes",
            "1,16,128",
            "--contexts",
            "1024,32768",
            "--ks",
            "0,2,4",
            "--out",
            str(out),
            "--plots",
            str(tmp_path / "plots"),
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "per-cell oracle" in text and "best batch-only" in text
    sched = load_schedule(str(out))
    obj = json.loads(out.read_text())
    assert obj["specsched_plan"]["arms"]["plan"]["geomean_speedup_vs_nospec"] >= 1.0
    assert sched.k_for(1, 1024) == obj["specsched_plan"]["k_cells"][0][0]
    for name in ("k_heatmap.png", "speedup.png"):
        assert (tmp_path / "plots" / name).read_bytes()[:4] == b"\x89PNG"


def test_plan_profile_batch_only_json(capsys) -> None:  # type: ignore[no-untyped-def]
    rc = main(["plan", str(EXAMPLES / "smollm2_cpu_manual.profile.json"), "--batch-only", "--json"])
    assert rc == 0
    obj = json.loads(capsys.readouterr().out)
    assert "num_speculative_tokens_per_batch_size" in obj
    assert all(len(e) == 3 for e in obj["num_speculative_tokens_per_batch_size"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["plan"], "give a profile.json, or --roofline"),
        (["plan", "nope.json"], "no such profile file"),
        (["plan", "--roofline", "--gpu", "B300"], "unknown GPU 'B300'"),
        (["plan", "--roofline", "--max-batch-ranges", "0"], "--max-batch-ranges must be >= 1"),
        (["plan", "--roofline", "--floor", "1.5"], "--floor must be a fraction of no-spec"),
        (["plan", "--roofline", "--floor", "nan"], "--floor must be a fraction of no-spec"),
        (
            ["plan", str(EXAMPLES / "smollm2_cpu_manual.profile.json"), "--contexts", "100000"],
            "outside the profiled range",
        ),
        (["profile"], "give exactly one of"),
        (["profile", "--engine"], "--out is required"),
        (["profile", "--roofline"], "--out is required"),
    ],
)
def test_user_errors_are_one_line_exit_2(argv: list[str], message: str, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_extrapolation_is_flagged(capsys) -> None:  # type: ignore[no-untyped-def]
    rc = main(
        [
            "plan",
            str(EXAMPLES / "smollm2_cpu_manual.profile.json"),
            "--contexts",
            "256,100000",
            "--allow-extrapolation",
        ]
    )
    assert rc == 0
    assert "clamped to the profile's edge" in capsys.readouterr().out


def test_profile_import_and_show(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "p.json"
    files = sorted(str(f) for f in (EXAMPLES / "vllm_bench").glob("*.json"))
    assert main(["profile", "--from-vllm-bench", *files, "--out", str(out)]) == 0
    assert main(["profile", "--from-vllm-bench", *files, "--out", str(out)]) == 2  # no overwrite
    capsys.readouterr()
    assert main(["profile", str(out), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["schema"] == "specsched.profile" and obj["metadata"]["source"] == "vllm-bench"
    assert main(["plan", str(out), "--out", str(tmp_path / "s.json")]) == 0
