"""Export fidelity: `specsched export --to vllm` keeps every field of its input (no vLLM needed).

For every supported input form — bare list, wrapper dict, a vLLM speculative config (3- or 5-item
`num_speculative_tokens_per_batch_size`), the upstream proposal's `speculative_token_schedule` +
`ctx_agg`, nested under `speculative_config`, a YAML file — export, parse the printed flags back
the way vLLM and the scheduler class read them, and compare: the same entries and effective K
everywhere, the same max K, the same ctx_agg, every other field with its value.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from specsched.cli import main
from specsched.integrations.vllm import config_from_additional
from specsched.schedule import INF, Schedule, export_sglang, parse_schedule
from specsched.schedule.serving import NOT_FIELDS, serving_spec_from_obj

ONE_D = [[1, 4, 3], [5, 16, 1], [17, 64, 0]]
TWO_D = [[1, 64, 1, 768, 3], [1, 64, 769, INF, 5], [65, 128, 1, 768, 1],
         [65, 128, 769, INF, 2]]
PROPOSAL = {"method": "draft_model", "model": "/m/draft", "num_speculative_tokens": 5,
            "draft_tensor_parallel_size": 1, "speculative_token_schedule": TWO_D,
            "ctx_agg": "max"}
FORMS: list[tuple[str, Any]] = [
    ("bare-1d", ONE_D),
    ("bare-2d", TWO_D),
    ("wrapper-2d", {"speculative_token_schedule": TWO_D}),
    ("wrapper-ctx-agg", {"speculative_token_schedule": TWO_D, "ctx_agg": "median"}),
    ("vllm-1d", {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2,
                 "prompt_lookup_max": 5, "num_speculative_tokens_per_batch_size": ONE_D}),
    ("vllm-2d-alias", {"method": "eagle3", "model": "/m/eagle3", "num_speculative_tokens": 4,
                       "draft_tensor_parallel_size": 2,
                       "num_speculative_tokens_per_batch_size": TWO_D}),
    ("proposal", PROPOSAL),
    ("proposal-clamped", {**PROPOSAL, "num_speculative_tokens": 4}),
    ("nested", {"speculative_config": PROPOSAL}),
]


def read_back(out: str) -> tuple[Schedule, str | None, dict[str, Any]]:
    """(schedule, ctx_agg, fields) as the flags deliver them to vLLM and the scheduler class."""
    argv = shlex.split(out)
    flags = dict(zip(argv[::2], argv[1::2]))
    spec = json.loads(flags["--speculative-config"])
    fields = {k: v for k, v in spec.items() if k not in NOT_FIELDS}
    if "--additional-config" not in flags:  # stock: the table is the schedule
        return serving_spec_from_obj(spec).schedule, None, fields
    cfg = config_from_additional(json.loads(flags["--additional-config"]))
    assert cfg is not None and flags["--scheduler-cls"].endswith("ContextAwareScheduler")
    # vLLM clamps every K to num_speculative_tokens, as the class does at start.
    return cfg.schedule.clamped(spec["num_speculative_tokens"]), cfg.ctx_agg.value, fields


def export(capsys: pytest.CaptureFixture[str], source: str, *extra: str) -> tuple[str, str]:
    assert main(["export", source, "--to", "vllm", "--max-num-seqs", "128", *extra]) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


@pytest.mark.parametrize(("name", "obj"), FORMS, ids=[n for n, _ in FORMS])
def test_export_parse_equal(
    name: str, obj: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    want = serving_spec_from_obj(obj)
    out, _ = export(capsys, json.dumps(obj))
    schedule, ctx_agg, fields = read_back(out)
    assert schedule.entries() == want.schedule.entries()
    assert schedule.effective_grid == want.schedule.effective_grid
    if want.schedule.max_k is not None:
        assert schedule.max_k == want.schedule.max_k
    if not want.schedule.is_batch_only:
        assert ctx_agg == (want.ctx_agg or "mean")
    assert {k: fields.get(k) for k, _ in want.fields} == want.field_dict  # every field kept
    assert fields.get("method") == (want.method or "ngram")
    # The same from a YAML file.
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(obj, sort_keys=False))
    assert export(capsys, str(path))[0] == out


def test_the_issue_example(capsys: pytest.CaptureFixture[str]) -> None:
    """A config written for the upstream proposal no longer exports as an ngram/mean server."""
    out, _ = export(capsys, json.dumps(PROPOSAL))
    argv = shlex.split(out)
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec["method"] == "draft_model" and spec["model"] == "/m/draft"
    assert spec["draft_tensor_parallel_size"] == 1 and spec["num_speculative_tokens"] == 5
    assert "ctx_agg" not in spec  # stock vLLM <= 0.33 rejects it there: it rides below
    extra = json.loads(argv[argv.index("--additional-config") + 1])
    assert extra["specsched"]["ctx_agg"] == "max"


def test_flags_replace_input_fields_with_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    out, err = export(capsys, json.dumps(PROPOSAL), "--method", "eagle3", "--ctx-agg", "mean")
    _, ctx_agg, fields = read_back(out)
    assert fields["method"] == "eagle3" and fields["model"] == "/m/draft" and ctx_agg == "mean"
    assert "--method eagle3 replaces the input's draft_model" in err
    assert "--ctx-agg mean replaces the input's max" in err


def test_stock_mode_keeps_fields_and_says_ctx_agg_is_dropped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out, err = export(capsys, json.dumps(PROPOSAL), "--mode", "stock")
    argv = shlex.split(out)
    spec = json.loads(argv[1])
    assert len(argv) == 2 and spec["method"] == "draft_model" and spec["model"] == "/m/draft"
    assert spec["num_speculative_tokens_per_batch_size"] == [[1, 64, 3], [65, 128, 1]]
    assert "ctx_agg=max is not a stock vLLM key" in err


def test_bad_ctx_agg_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", json.dumps({**PROPOSAL, "ctx_agg": "p90"}), "--to", "vllm"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ctx_agg must be one of mean, median, max")
    assert err.count("\n") == 1


def test_sglang_ctx_buckets() -> None:
    s = parse_schedule([*TWO_D, [129, 256, 1, 768, 0], [129, 256, 769, INF, 0]])
    cfg = export_sglang(s)["speculative_adaptive_config"]
    assert cfg["1"] == {"ctx_buckets": {"1-768": {"candidate_steps": [3]},
                                        f"769-{INF}": {"candidate_steps": [5]}}}
    assert cfg["129"] == {"candidate_steps": [0]}  # one K in the row: the plain form
    assert export_sglang(s, context_axis=False)["speculative_adaptive_config"]["1"] == {
        "candidate_steps": [3, 5]}
    merged = parse_schedule([[1, 8, 1, 99, 1], [1, 8, 100, 999, 1], [1, 8, 1000, INF, 4]])
    assert export_sglang(merged)["speculative_adaptive_config"]["1"]["ctx_buckets"] == {
        "1-999": {"candidate_steps": [1]}, f"1000-{INF}": {"candidate_steps": [4]}}
    one_d = export_sglang(parse_schedule(ONE_D))
    assert one_d["speculative_adaptive_config"] == {
        "1": {"candidate_steps": [3]}, "5": {"candidate_steps": [1]},
        "17": {"candidate_steps": [0]}}
