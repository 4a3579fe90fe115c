"""Issue 16's cost figures on SmolLM2, measured side by side in one process (interleaved rounds).

    .venv/bin/python benchmarks/spec_costs.py --out /tmp/spec_costs.json
    .venv/bin/python benchmarks/spec_costs.py --quick --threads 1    # 3 rounds, one block

For 1 and 2 torch threads (one block each; within a block every arm runs once per round, the
order rotating, and each figure is the median over rounds):

(a) verify cost: T(q) / T(q=1) of one target forward (logits for every row) at B = 1 and 4,
    ctx 4096, q = 4 and 8, with the native attention kernel and with SDPA (the old path);
(b) draft cost: one streaming self-draft token (sinks + last W positions) / one full target
    decode step at ctx 512 and 4096, B = 1 and 4, for the fp32 draft (the target's weights),
    the bf16 draft and the int8 draft (`LlamaModel.with_weight_dtype`; int8 = `Int8Linear`, its
    native kernel, each layer two native calls + attention (`int8_layer`); int8-eager = the same
    weights with the layers' eager torch glue, the A/B of that; skipped where it cannot build);
(c) attention alone: us per context token per step (30 layers, B = 1, ctx 4096) at q = 1, 4, 8,
    native kernel and SDPA.

The KV cache is filled with random values (timing does not depend on them), so no prefill is
needed. Each arm is one synthetic forward with `build_metadata`, exactly what a step runs.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from specsched.engine import LLM
from specsched.engine.layers import cpu_kernels, int8_linear
from specsched.engine.layers.attention import build_metadata, ragged_attention
from specsched.engine.layers.model import LlamaModel
from specsched.engine.spec.drafters.streaming import streaming_ranges

WINDOW, SINKS = 256, 4
DRAFT_BATCHES = (1, 4)
Arm = Callable[[], Any]


def forward_arm(model: LlamaModel, llm: LLM, batch: int, ctx: int, q: int,
                window: bool = False) -> Arm:
    """One forward of `batch` sequences (slots 0..B-1) bringing q tokens at position ctx."""
    starts = [ctx] * batch
    ranges = tuple(streaming_ranges(ctx, WINDOW, SINKS) for _ in starts) if window else None
    meta = build_metadata(list(range(batch)), starts, [q] * batch, kv_ranges=ranges)
    ids = torch.randint(100, 20000, (batch * q,))
    kv = llm.engine.kv
    return lambda: model(ids, meta, kv)  # logits for every row: [B*q, V]


def attention_arm(llm: LLM, ctx: int, q: int) -> Arm:
    """Attention alone over all layers: B = 1, q queries at position ctx."""
    cfg, kv = llm.engine.model_cfg, llm.engine.kv
    meta = build_metadata([0], [ctx], [q])
    query = torch.randn(q, cfg.num_heads, cfg.head_dim)
    scale = cfg.head_dim**-0.5

    def run() -> None:
        for k_cache, v_cache in zip(kv.k, kv.v, strict=True):
            ragged_attention(query, k_cache, v_cache, meta, scale)

    return run


class NoNative:
    """Within this block attention takes its SDPA paths (the kernel reports unavailable)."""

    def __enter__(self) -> None:
        self.saved = cpu_kernels.available
        cpu_kernels.available = lambda q, k: False  # type: ignore[assignment]

    def __exit__(self, *exc: object) -> None:
        cpu_kernels.available = self.saved


def timed(arm: Arm, native: bool, inner: int) -> float:
    """Milliseconds per call (mean of `inner` calls after one untimed warm call)."""
    with contextlib.nullcontext() if native else NoNative():
        arm()
        t = time.perf_counter()
        for _ in range(inner):
            arm()
        return 1000.0 * (time.perf_counter() - t) / inner


def measure(arms: dict[str, tuple[Arm, bool, int]], rounds: int) -> dict[str, float]:
    """Median ms per arm over `rounds` interleaved rounds (order rotates every round)."""
    names = list(arms)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[: r % len(names)]:
            arm, native, inner = arms[n]
            samples[n].append(timed(arm, native, inner))
    return {n: statistics.median(v) for n, v in samples.items()}


def block(llm: LLM, drafts: dict[str, LlamaModel], rounds: int) -> dict[str, Any]:
    target = llm.engine.model
    arms: dict[str, tuple[Arm, bool, int]] = {}
    verify_batches = (1, 4)
    for b in verify_batches:
        for q in (1, 4, 8):
            for native in (True, False):
                arms[f"verify B={b} q={q} {'native' if native else 'sdpa'}"] = (
                    forward_arm(target, llm, b, 4096, q), native, 2)
    models = {"fp32": target, **drafts}
    for b in DRAFT_BATCHES:
        for ctx in (512, 4096):
            arms[f"step B={b} ctx={ctx}"] = (forward_arm(target, llm, b, ctx, 1), True, 3)
            for prec, model in models.items():
                arms[f"draft {prec} B={b} ctx={ctx}"] = (
                    forward_arm(model, llm, b, ctx, 1, True), True, 3)
    for q in (1, 4, 8):
        for native in (True, False):
            arms[f"attn q={q} {'native' if native else 'sdpa'}"] = (
                attention_arm(llm, 4096, q), native, 3)
    ms = measure(arms, rounds)
    out: dict[str, Any] = {"ms": ms, "verify_ratio": {}, "draft_over_step": {},
                           "attn_us_per_ctx_token": {}}
    for b in verify_batches:
        for impl in ("native", "sdpa"):
            base = ms[f"verify B={b} q=1 {impl}"]
            for q in (4, 8):
                out["verify_ratio"][f"B={b} q={q} {impl}"] = ms[f"verify B={b} q={q} {impl}"] / base
    for b in DRAFT_BATCHES:
        for ctx in (512, 4096):
            for prec in models:
                out["draft_over_step"][f"{prec} B={b} ctx={ctx}"] = (
                    ms[f"draft {prec} B={b} ctx={ctx}"] / ms[f"step B={b} ctx={ctx}"])
    for key, v in ms.items():
        if key.startswith("attn "):
            out["attn_us_per_ctx_token"][key.removeprefix("attn ")] = 1000.0 * v / 4096
    return out


def eager_layers(draft: LlamaModel) -> LlamaModel:
    """The int8 draft with every decoder layer on the eager torch path (weights shared): the A/B
    of the native int8 layer (`layers/int8_layer.py`)."""
    twin = copy.copy(draft)
    twin._modules = dict(draft._modules)  # type: ignore[assignment]  # own module table
    layers = [copy.copy(layer) for layer in draft.layers]
    for layer in layers:
        layer.native_int8 = False
    twin.layers = torch.nn.ModuleList(layers)
    return twin


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--quick", action="store_true", help="3 rounds")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    rounds = 3 if args.quick else args.rounds
    llm = LLM("smollm2-135m", max_num_seqs=4, max_model_len=4096 + 64, num_threads=1)
    gen = torch.Generator().manual_seed(0)
    for t in (*llm.engine.kv.k, *llm.engine.kv.v):
        t.normal_(generator=gen)
    target = llm.engine.model
    drafts = {"bf16": target.with_weight_dtype(torch.bfloat16)}
    if int8_linear.available("cpu"):
        drafts["int8"] = target.with_weight_dtype(torch.int8)
        drafts["int8-eager"] = eager_layers(drafts["int8"])
    result: dict[str, Any] = {
        "machine": {"cpu_bf16": bool(torch.cpu.get_capabilities().get("avx512_bf16")),
                    "amx_bf16": bool(torch.cpu.get_capabilities().get("amx_bf16")),
                    "load_avg_start": os.getloadavg()[0], "torch": torch.__version__},
        "native_kernel": cpu_kernels.available(torch.zeros(1, 1, 64), llm.engine.kv.k[0]),
        "draft_extra_mb": {k: d.weight_nbytes() / 1e6 for k, d in drafts.items()},
        "rounds": rounds, "window": WINDOW, "sinks": SINKS, "threads": {},
    }
    for threads in (int(x) for x in args.threads.split(",")):
        torch.set_num_threads(threads)
        res = block(llm, drafts, rounds)
        result["threads"][str(threads)] = res
        print(f"\n== {threads} thread(s), load avg {os.getloadavg()[0]:.2f}")
        for section in ("verify_ratio", "draft_over_step", "attn_us_per_ctx_token"):
            print(f"  {section}:")
            for k, v in res[section].items():
                print(f"    {k:<24} {v:8.3f}")
    result["machine"]["load_avg_end"] = os.getloadavg()[0]
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
