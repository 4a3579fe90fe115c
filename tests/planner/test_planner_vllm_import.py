"""Importer for `vllm bench serve --save-result` files (keys as in vllm/benchmarks/serve.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specsched.errors import UserError
from specsched.planner import expected_tokens, import_vllm_bench
from specsched.planner.vllm_import import parse_run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "profiles" / "vllm_bench"


def _run(conc: int | None, itl: float, **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "backend": "vllm",
        "label": None,
        "model_id": "m",
        "max_concurrency": conc,
        "completed": 10,
        "total_input_tokens": 10_000,
        "total_output_tokens": 2_000,
        "median_itl_ms": itl,
        "std_itl_ms": 1.0,
        "mean_itl_ms": itl,
        "p99_itl_ms": 2 * itl,
    }
    obj.update(extra)
    return obj


def test_example_files_import() -> None:
    p = import_vllm_bench(sorted(EXAMPLES.glob("*.json")))
    assert p.grid.batch_sizes == (1, 8) and p.grid.ks == (0, 4) and p.grid.contexts == (1100,)
    assert p.timing(8, 1100, 4).t_step_ms.median == 15.0  # type: ignore[union-attr]
    # prefix rates 0.8, 0.56, 0.34, 0.2 -> conditional 0.8, 0.7, 0.607, 0.588
    a = p.acceptance[0].a
    assert a == pytest.approx((0.8, 0.7, 0.34 / 0.56, 0.2 / 0.34))
    assert expected_tokens(a, 4) == pytest.approx(1 + 0.8 + 0.56 + 0.34 + 0.2)
    p.require_plannable()


def test_k_sources(tmp_path: Path) -> None:
    f = tmp_path / "run.json"
    assert parse_run(_run(4, 10.0), "x-k3-foo.json").k == 3  # file name
    assert parse_run(_run(4, 10.0, label="eagle_k5"), str(f)).k == 5  # label
    assert parse_run(_run(4, 10.0, k="2"), "x-k3.json").k == 2  # --metadata k=2 wins
    assert parse_run(_run(4, 10.0, k="2"), "x.json", k=7).k == 7  # explicit wins
    with pytest.raises(UserError, match="cannot tell K"):
        parse_run(_run(4, 10.0), "run.json")
    # 10000/10 input + 2000/10/2 output = 1100 tokens of context
    assert parse_run(_run(4, 10.0), "k0.json").ctx == 1100
    assert parse_run(_run(None, 10.0), "k0-concurrency16.json").batch_size == 16
    with pytest.raises(UserError, match="no max_concurrency"):
        parse_run(_run(None, 10.0), "k0.json")


def test_append_result_json_lines_and_merging_contexts(tmp_path: Path) -> None:
    f = tmp_path / "runs.json"
    rows = [
        _run(1, 7.0, k="0"),
        _run(
            1,
            11.0,
            k="2",
            spec_decode_acceptance_length=2.2,
            spec_decode_num_drafts=100,
            total_output_tokens=2_100,
        ),  # ctx 1105: merged with 1100
    ]
    f.write_text("\n".join(json.dumps(r) for r in rows))
    p = import_vllm_bench([f])
    assert p.grid.contexts == (1102,)  # median of 1100 and 1105, within 10%: one context
    # only the mean length is known: 1 + a + a^2 = 2.2 -> a = (sqrt(5.8) - 1) / 2 = 0.70416
    assert p.acceptance[0].a == pytest.approx((0.70416,) * 2, abs=1e-5)


def test_missing_acceptance_needs_an_assumption(tmp_path: Path) -> None:
    f = tmp_path / "runs.json"
    f.write_text("\n".join(json.dumps(r) for r in [_run(1, 7.0, k=0), _run(1, 9.0, k=3)]))
    with pytest.raises(UserError, match="give an assumed rate"):
        import_vllm_bench([f])
    p = import_vllm_bench([f], acceptance=(0.7,))
    assert p.acceptance[0].a == (0.7, 0.7, 0.7)


def test_not_a_result_file(tmp_path: Path) -> None:
    f = tmp_path / "x.json"
    f.write_text(json.dumps({"hello": 1}))
    with pytest.raises(UserError, match="no median_itl_ms"):
        import_vllm_bench([f], k=0)
