"""Speculative decoding on SmolLM2 with the streaming (StreamingLLM self-spec) drafter.

Per cell (batch B x context ctx): B prompts sharing a ctx-token prefix of real English text
(Python's offline `pydoc_data.topics`) with distinct 16-token suffixes (prefix caching makes the
shared part cheap after a warm-up). Arms: no speculation, a K = 0 schedule on the streaming
drafter (fast-path overhead), and static K in --k. Arms run interleaved (A B C .. A B C ..),
`--reps` times; decode tokens/s = tokens after each request's first / decode wall time; the
median per arm, its ratio to no-spec measured in the same run, acceptance per draft position.

    .venv/bin/python benchmarks/spec_bench.py --threads 1 --out notes/spec_bench.json
    .venv/bin/python benchmarks/spec_bench.py --quick
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

SUFFIX_TOKENS = 16


def corpus_tokens(tok: Any, n: int) -> list[int]:
    from pydoc_data.topics import topics

    text = "\n\n".join(topics[k] for k in sorted(topics))
    ids: list[int] = tok.encode(text)
    assert len(ids) >= n + 64 * SUFFIX_TOKENS, "pydoc topics too short"
    return ids


def build_prompts(ids: list[int], batch: int, ctx: int) -> list[list[int]]:
    prefix = ids[: ctx - SUFFIX_TOKENS]
    tail = ids[ctx + 1000 :]
    return [prefix + tail[i * 97 : i * 97 + SUFFIX_TOKENS] for i in range(batch)]


def run_arm(llm: Any, prompts: list[list[int]], tokens: int) -> dict[str, Any]:
    from specsched.engine import SamplingParams

    outs = llm.generate(prompts, SamplingParams(max_tokens=tokens, ignore_eos=True))
    first = max(o.stats.first_token_time for o in outs)
    last = max(o.stats.finish_time for o in outs)
    decode_tokens = sum(len(o.token_ids) - 1 for o in outs)
    st = llm.last_run_stats
    return {
        "decode_tok_s": decode_tokens / (last - first),
        "num_steps": st.num_steps,
        "draft_s": st.draft_s,
        "verify_s": st.verify_s,
        "overhead_s": st.overhead_s,
        "drafted": list(st.spec.drafted_per_position),
        "accepted": list(st.spec.accepted_per_position),
        "token_ids": [o.token_ids for o in outs],
    }


def arms(ks: list[int], window: int, sinks: int, dtypes: list[str], k0: bool = True
         ) -> dict[str, Any]:
    from specsched.engine.spec.config import DrafterKind, SpeculativeConfig
    from specsched.policy import PolicyConfig
    from specsched.schedule import parse_schedule

    out: dict[str, Any] = {"nospec": None}
    # K = 0 in every reachable cell, but not all-zero: the router runs every step (a schedule
    # that is zero everywhere would skip routing entirely, which is cheaper still)
    k0_schedule = parse_schedule([[1, 999, 0], [1000, 1000, 4]])
    streaming = DrafterKind.STREAMING
    if k0:
        out["k0"] = SpeculativeConfig(streaming, window=window, num_sink_tokens=sinks,
                                      policy=PolicyConfig(schedule=k0_schedule))
    for dtype in dtypes:  # arms "k2" for one draft dtype, "k2/int8", "k2/bfloat16" for several
        for k in ks:
            name = f"k{k}" if len(dtypes) == 1 else f"k{k}/{dtype}"
            out[name] = SpeculativeConfig(streaming, window=window, num_sink_tokens=sinks,
                                          policy=PolicyConfig.constant(k), draft_dtype=dtype)
    return out


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    base = statistics.median(r["decode_tok_s"] for r in runs["nospec"])
    ref_ids = runs["nospec"][0]["token_ids"]
    cell: dict[str, Any] = {}
    for arm, rs in runs.items():
        med = statistics.median(r["decode_tok_s"] for r in rs)
        drafted = [sum(x) for x in zip(*(r["drafted"] for r in rs))] if rs[0]["drafted"] else []
        accepted = [sum(x) for x in zip(*(r["accepted"] for r in rs))] if drafted else []
        steps = sum(r["num_steps"] for r in rs)
        cell[arm] = {
            "decode_tok_s": [round(r["decode_tok_s"], 2) for r in rs],
            "median_tok_s": round(med, 2),
            "ratio_vs_nospec": round(med / base, 3),
            "acceptance_per_position": [round(a / d, 3) if d else None
                                        for a, d in zip(accepted, drafted, strict=True)],
            "mean_accepted_drafts": round(sum(accepted) / drafted[0], 3) if drafted else 0.0,
            "time_split_s": {k: round(sum(r[k] for r in rs), 2)
                             for k in ("draft_s", "verify_s", "overhead_s")},
            "steps": steps,
            "same_tokens_as_nospec": all(r["token_ids"] == ref_ids for r in rs),
        }
    spec_arms = {a: c for a, c in cell.items() if a not in ("nospec", "k0")}
    for dtype in sorted({a.partition("/")[2] for a in spec_arms} - {""}):  # best K per dtype
        mine = {a: c for a, c in spec_arms.items() if a.endswith("/" + dtype)}
        top = max(mine, key=lambda a: mine[a]["median_tok_s"])
        cell[f"oracle/{dtype}"] = {"arm": top, "ratio_vs_nospec": mine[top]["ratio_vs_nospec"]}
    best = max(spec_arms, key=lambda a: spec_arms[a]["median_tok_s"])
    cell["best"] = best if spec_arms[best]["ratio_vs_nospec"] > 1.0 else "nospec"
    return cell


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--batch", default="1,4,16")
    ap.add_argument("--ctx", default="256,1024,4096")
    ap.add_argument("--k", default="1,2,3,4,6")
    ap.add_argument("--window", type=int, default=256)
    ap.add_argument("--sinks", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=32, help="output tokens per request")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--draft-dtypes", default="auto",
                    help="comma-separated draft weight dtypes; several: one arm per K and dtype")
    ap.add_argument("--no-k0", action="store_true", help="leave out the K=0 fast-path arm")
    ap.add_argument("--quick", action="store_true", help="B 1,4 x ctx 256, K 2,4, 12 tokens")
    ap.add_argument("--out", type=Path, default=Path("spec_bench.json"))
    args = ap.parse_args()
    if args.quick:
        args.batch, args.ctx, args.k, args.tokens, args.reps = "1,4", "256", "2,4", 12, 1
    batches = [int(x) for x in args.batch.split(",")]
    ctxs = [int(x) for x in args.ctx.split(",")]
    ks = [int(x) for x in args.k.split(",")]

    from specsched.engine import LLM

    llm = LLM("smollm2-135m", max_num_seqs=max(batches), num_threads=args.threads,
              max_model_len=max(ctxs) + args.tokens + 64, max_num_batched_tokens=4096)
    ids = corpus_tokens(llm.tokenizer, max(ctxs))
    arm_cfgs = arms(ks, args.window, args.sinks, args.draft_dtypes.split(","), not args.no_k0)
    result: dict[str, Any] = {
        "command": "python benchmarks/spec_bench.py " + " ".join(sys.argv[1:]),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_avg_start": os.getloadavg(),
        "config": vars(args) | {"out": str(args.out)},
        "cells": {},
    }
    print(f"{'B':>3} {'ctx':>5} " + " ".join(f"{a:>8}" for a in arm_cfgs) + "  best  acc/pos")
    for ctx in ctxs:
        for b in batches:
            prompts = build_prompts(ids, b, ctx)
            llm.engine.set_speculative(None)
            llm.generate(prompts, _warm())  # prefix cache + allocator warm-up
            runs: dict[str, list[dict[str, Any]]] = {a: [] for a in arm_cfgs}
            for _ in range(args.reps):
                for arm, cfg in arm_cfgs.items():
                    llm.engine.set_speculative(cfg)
                    runs[arm].append(run_arm(llm, prompts, args.tokens))
            cell = summarize(runs)
            cell["load_avg"] = os.getloadavg()
            result["cells"][f"B{b}_ctx{ctx}"] = cell
            deepest = [a for a in arm_cfgs if a.startswith(f"k{max(ks)}")]
            acc = cell[deepest[-1]]["acceptance_per_position"] if deepest else []
            print(f"{b:>3} {ctx:>5} "
                  + " ".join(f"{cell[a]['ratio_vs_nospec']:>8.2f}" for a in arm_cfgs)
                  + f"  {cell['best']:>5}  {acc}  (nospec {cell['nospec']['median_tok_s']} tok/s,"
                  f" load {cell['load_avg'][0]:.1f})", flush=True)
            _write(args.out, result)
    result["load_avg_end"] = os.getloadavg()
    _write(args.out, result)
    return 0


def _warm() -> Any:
    from specsched.engine import SamplingParams

    return SamplingParams(max_tokens=2, ignore_eos=True)


def _write(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj, indent=1))
    os.replace(tmp, path)


if __name__ == "__main__":
    raise SystemExit(main())
