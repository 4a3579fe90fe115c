"""A tiny real run of `specsched microbench attention` (seconds): structure, files, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from specsched.cli import main

TINY = [
    "microbench", "attention", "--model", "smollm2-135m", "--layers", "2", "--heads", "4",
    "--kv-heads", "2", "--head-dim", "16", "--batch-size", "4", "--mean-levels", "64,128",
    "--max-levels", "128", "--min-ctx", "4", "--repeats", "3", "--warmup", "0", "-k", "2",
]


def test_tiny_run_writes_json_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mb.json"
    rc = main([*TINY, "--kernels", "engine,padded,nested,flash_varlen", "--out", str(out)])
    assert rc == 0
    result = json.loads(out.read_text())
    assert (tmp_path / "mb.png").stat().st_size > 0
    assert result["meta"]["geometry"] == {
        "name": "smollm2-135m", "num_layers": 2, "num_heads": 4, "num_kv_heads": 2, "head_dim": 16,
    }
    assert result["meta"]["query_len"] == 3
    assert len(result["shapes"]) == 2 * 6 + 4
    for shape in result["shapes"]:
        assert sum(shape["contexts"]) == shape["total_ctx"]
        for kernel in ("engine", "padded", "nested"):
            t = shape["timings"][kernel]
            assert len(t["samples_ms"]) == 3
            assert t["q1_ms"] <= t["median_ms"] <= t["q3_ms"]
    assert result["kernels"]["flash_varlen"] == {
        "status": "skipped", "reason": "flash-attn varlen needs CUDA",
    }
    for kernel in ("engine", "padded", "nested"):
        info = result["kernels"][kernel]
        assert info["status"] == "ok"
        verdict = info["verdict"]
        assert verdict["aggregator"] in ("mean", "max", "median", "inconclusive")
        assert {f["predictor"] for f in verdict["fits"]} == {"sum", "batch_max", "batch_median"}
    assert "verdict" in capsys.readouterr().out


def test_json_flag_prints_the_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    rc = main([*TINY, "--kernels", "engine", "--out", str(out), "--no-plot", "--json"])
    assert rc == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["kernels"]["engine"]["status"] == "ok"
    assert not (tmp_path / "r.png").exists()


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--kernels", "warp"], "--kernels"),
        (["--mean-levels", "10"], "ctx level"),
        (["--model", "no-such-model"], "unknown model"),
        (["--kv-heads", "3"], "multiple"),
        (["--dtype", "int8"], "dtype"),
    ],
)
def test_bad_input_is_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], needle: str
) -> None:
    rc = main([*TINY, "--out", str(tmp_path / "x.json"), *extra])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("error: ") and needle in err and err.count("\n") == 1
    assert not (tmp_path / "x.json").exists()


def test_pure_modules_do_not_import_torch() -> None:
    code = (
        "import sys\n"
        "import specsched.microbench.shapes, specsched.microbench.fit\n"
        "import specsched.microbench.geometry, specsched.microbench.report\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_geometry_from_a_model_folder(tmp_path: Path) -> None:
    from specsched.microbench.geometry import resolve_geometry

    config = {
        "num_hidden_layers": 3, "hidden_size": 64, "intermediate_size": 128,
        "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 100,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    geo = resolve_geometry(str(tmp_path), num_layers=1)
    assert (geo.num_layers, geo.num_heads, geo.num_kv_heads, geo.head_dim) == (1, 8, 2, 8)
