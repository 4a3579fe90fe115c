"""Acceptance from specsched's vLLM scheduler class: its JSON-lines trace or its /metrics text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specsched.cli import main
from specsched.errors import UserError
from specsched.planner import load_profile
from specsched.planner.vllm_trace import (
    acceptance_from_metrics,
    acceptance_from_trace,
    metric_samples,
)
from specsched.schedule import INF

SCHEDULE = [[1, 8, 1, 511, 1], [1, 8, 512, INF, 3]]
# (ctx, drafts, accepted) per request; per context range: position p tested when drafted and
# 0..p-1 accepted. Short range: 3 drafts of 1, accepted 2 -> a = (2/3,).
# Long range: (600,3,3) (700,3,1) (800,2,0) (900,3,2): tested (4, 3, 2), accepted (3, 2, 1).
SHORT = [[100, 1, 1], [200, 1, 0], [300, 1, 1]]
LONG = [[600, 3, 3], [700, 3, 1], [800, 2, 0], [900, 3, 2]]


def write_trace(path: Path) -> Path:
    lines = [
        {"kind": "schedule", "entries": SCHEDULE, "max_k": None, "ctx_agg": "mean"},
        {"kind": "decision", "step": 1, "batch_size": 3, "pool": "decode", "ctx_repr": 200,
         "bucket": [1, 8, 1, 511], "k": 1, "k_scheduled": 1},
        {"kind": "outcome", "step": 1, "batch_size": 3, "bucket": [1, 8, 1, 511], "k": 1,
         "step_time_s": 0.02, "decoding": 3, "requests": SHORT},
        # a decision routed to the short range while its requests were long: binned by their
        # own context
        {"kind": "outcome", "step": 2, "batch_size": 4, "bucket": [1, 8, 1, 511], "k": 3,
         "step_time_s": 0.03, "decoding": 5, "requests": LONG},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


METRICS = """\
# HELP specsched_num_drafts_total requests that verified drafts
# TYPE specsched_num_drafts_total counter
specsched_num_drafts_total{bs_bucket="1-8",ctx_bucket="1-511"} 3.0
specsched_num_drafts_total{bs_bucket="1-8",ctx_bucket="512-inf"} 2.0
specsched_num_drafts_total{bs_bucket="9-inf",ctx_bucket="512-inf"} 2.0
specsched_num_drafts_created{bs_bucket="1-8",ctx_bucket="1-511"} 1.7e9
specsched_draft_context_tokens_total{bs_bucket="1-8",ctx_bucket="1-511"} 600.0
specsched_draft_context_tokens_total{bs_bucket="1-8",ctx_bucket="512-inf"} 1300.0
specsched_draft_context_tokens_total{bs_bucket="9-inf",ctx_bucket="512-inf"} 1700.0
specsched_num_tested_tokens_per_pos_total{bs_bucket="1-8",ctx_bucket="1-511",position="0"} 3.0
specsched_num_accepted_tokens_per_pos_total{bs_bucket="1-8",ctx_bucket="1-511",position="0"} 2.0
specsched_num_tested_tokens_per_pos_total{bs_bucket="1-8",ctx_bucket="512-inf",position="0"} 2.0
specsched_num_tested_tokens_per_pos_total{bs_bucket="1-8",ctx_bucket="512-inf",position="1"} 2.0
specsched_num_tested_tokens_per_pos_total{bs_bucket="1-8",ctx_bucket="512-inf",position="2"} 1.0
specsched_num_tested_tokens_per_pos_total{bs_bucket="9-inf",ctx_bucket="512-inf",position="0"} 2.0
specsched_num_tested_tokens_per_pos_total{bs_bucket="9-inf",ctx_bucket="512-inf",position="1"} 1.0
specsched_num_tested_tokens_per_pos_total{bs_bucket="9-inf",ctx_bucket="512-inf",position="2"} 1.0
specsched_num_accepted_tokens_per_pos_total{bs_bucket="1-8",ctx_bucket="512-inf",position="0"} 2.0
specsched_num_accepted_tokens_per_pos_total{bs_bucket="1-8",ctx_bucket="512-inf",position="1"} 1.0
specsched_num_accepted_tokens_per_pos_total{bs_bucket="1-8",ctx_bucket="512-inf",position="2"} 1.0
specsched_num_accepted_tokens_per_pos_total{bs_bucket="9-inf",ctx_bucket="512-inf",position="0"} 1.0
specsched_num_accepted_tokens_per_pos_total{bs_bucket="9-inf",ctx_bucket="512-inf",position="1"} 1.0
vllm:num_requests_running{engine="0",model_name="m"} 0.0
"""


def test_trace_acceptance(tmp_path: Path) -> None:
    points = acceptance_from_trace(write_trace(tmp_path / "t.jsonl"))
    assert [(p.ctx, p.n) for p in points] == [(200, 3), (750, 4)]
    assert points[0].a == pytest.approx((2 / 3,))
    assert points[1].a == pytest.approx((3 / 4, 2 / 3, 1 / 2))


def test_metrics_acceptance_sums_batch_buckets(tmp_path: Path) -> None:
    f = tmp_path / "metrics.txt"
    f.write_text(METRICS)
    points = acceptance_from_metrics(f)
    assert [(p.ctx, p.n) for p in points] == [(200, 3), (750, 4)]
    assert points[0].a == pytest.approx((2 / 3,))
    assert points[1].a == pytest.approx((3 / 4, 2 / 3, 1 / 2))
    assert len(metric_samples(METRICS)) == 20  # specsched_* samples only


@pytest.mark.parametrize(
    ("text", "match"),
    [("", "no draft outcomes"), ('{"kind": "outcome", "bucket": [1, 2]}', "4-item bucket"),
     ('{"kind": "outcome", "bucket": [1, 8, 1, 9], "requests": [[1, 2]]}', "triples"),
     ("{not json", "invalid JSON")],
)
def test_trace_errors(tmp_path: Path, text: str, match: str) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text(text)
    with pytest.raises(UserError, match=match):
        acceptance_from_trace(f)


def test_cli_acceptance_only_and_merged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path / "t.jsonl")
    out = tmp_path / "acc.json"
    assert main(["profile", "--from-vllm-trace", str(trace), "--out", str(out)]) == 0
    alone = load_profile(out)
    assert not alone.timings and [a.ctx for a in alone.acceptance] == [200, 750]
    assert "acceptance per draft position" in capsys.readouterr().out
    # Merged into a roofline profile: its timings, the measured acceptance.
    merged = tmp_path / "merged.json"
    assert main(["profile", "--roofline", "--gpu", "H100-SXM", "--model", "llama-3.1-8b",
                 "--ks", "0,1,2,3", "--from-vllm-trace", str(trace), "--out", str(merged)]) == 0
    p = load_profile(merged)
    assert p.timings and p.acceptance == alone.acceptance
    assert "acceptance from t.jsonl" in p.metadata.notes
    metrics = tmp_path / "m.txt"
    metrics.write_text(METRICS)
    assert main(["profile", str(merged), "--from-vllm-metrics", str(metrics),
                 "--out", str(tmp_path / "again.json")]) == 0
    assert load_profile(tmp_path / "again.json").acceptance == alone.acceptance
    capsys.readouterr()
    assert main(["profile", "--from-vllm-trace", str(trace), "--from-vllm-metrics",
                 str(metrics), "--out", str(tmp_path / "x.json")]) == 2
    assert "one of --from-vllm-trace and --from-vllm-metrics" in capsys.readouterr().err
