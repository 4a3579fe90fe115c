"""CPU kernel probes behind the engine's batch-1 choices (notes/engine.md), one process per run.

    .venv/bin/python benchmarks/cpu_probe.py gemv        # one-row matmul kernels vs sum()
    .venv/bin/python benchmarks/cpu_probe.py attention   # one decode token's attention kernels
    .venv/bin/python benchmarks/cpu_probe.py overhead    # cost of calling a compiled graph
    .venv/bin/python benchmarks/cpu_probe.py profile --ctx 1024   # compiled B=1 step, by op

All variants of a probe run in the same process one after the other (medians of repeated
calls), over enough copies of each weight / KV that nothing is cache-resident; ratios between
variants are the meaningful output on a machine whose bandwidth drifts.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

# SmolLM2-135M: hidden 576, 9 query / 3 KV heads of 64, intermediate 1536, vocab 49152.
GEMV_SHAPES = {"qkv": (960, 576), "o": (576, 576), "gate_up": (3072, 576),
               "down": (576, 1536), "lm_head": (49152, 576)}
HKV, GROUP, HEAD_DIM = 3, 3, 64


def median_s(fn: Callable[[], Any], n: int = 100, warmup: int = 10) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def cycling(tensors: list[torch.Tensor], fn: Callable[[torch.Tensor], Any]) -> Callable[[], Any]:
    """A call that applies fn to the next tensor of the list (so none stays in cache)."""
    state = [0]

    def call() -> Any:
        state[0] = (state[0] + 1) % len(tensors)
        return fn(tensors[state[0]])

    return call


def cycling_kv(kvs: list[tuple[torch.Tensor, torch.Tensor]],
               fn: Callable[[tuple[torch.Tensor, torch.Tensor]], Any]) -> Callable[[], Any]:
    state = [0]

    def call() -> Any:
        state[0] = (state[0] + 1) % len(kvs)
        return fn(kvs[state[0]])

    return call


def probe_gemv() -> None:
    @torch.compile(dynamic=False)
    def rowdot(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return (w * x).sum(-1)

    linear = torch.ops.mkldnn._linear_pointwise
    for name, (n, k) in GEMV_SHAPES.items():
        ws = [torch.randn(n, k) for _ in range(max(1, int(400e6 // (n * k * 4))))]
        wts = [w.t().contiguous() for w in ws]
        packed = [torch.ops.mkldnn._reorder_linear_weight(w, 16) for w in ws]
        x = torch.randn(1, k)

        def one_dnn(w: torch.Tensor, x: torch.Tensor = x) -> Any:
            return linear(x, w, None, "none", [], "")

        def mkl(w: torch.Tensor, x: torch.Tensor = x) -> Any:
            return F.linear(x, w)

        def transposed(wt: torch.Tensor, x: torch.Tensor = x) -> Any:
            return x @ wt

        def inductor(w: torch.Tensor, x: torch.Tensor = x) -> Any:
            return rowdot(x[0], w)

        variants = {
            "oneDNN plain": cycling(ws, one_dnn),
            "oneDNN packed": cycling(packed, one_dnn),
            "F.linear": cycling(ws, mkl),
            "x @ W.T (contig)": cycling(wts, transposed),
            "inductor (W*x).sum(-1)": cycling(ws, inductor),
            "sum() of W": cycling(ws, torch.sum),
        }
        cells = [f"{v}: {n * k * 4 / median_s(f) / 1e9:.1f}" for v, f in variants.items()]
        print(f"{name} [{n}x{k}] GB/s  " + "  ".join(cells), flush=True)


def probe_attention() -> None:
    @torch.compile(dynamic=True)
    def inductor_attn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        p = torch.softmax((k[:, None] * q[:, :, None]).sum(-1) * HEAD_DIM**-0.5, -1)
        return (p[:, :, :, None] * v[:, None]).sum(2)

    flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    q = torch.randn(HKV, GROUP, HEAD_DIM)
    scale = HEAD_DIM**-0.5

    def split(k: torch.Tensor, v: torch.Tensor, n: int) -> torch.Tensor:
        c = k.shape[1] // n  # flash-decoding: n chunks as a batch, merged by log-sum-exp
        ks = k[:, : c * n].unflatten(1, (n, c)).transpose(0, 1)
        vs = v[:, : c * n].unflatten(1, (n, c)).transpose(0, 1)
        o, lse = flash(q[None].expand(n, -1, -1, -1), ks, vs, scale=scale)[:2]
        return (o * torch.softmax(lse, 0)[..., None]).sum(0)

    layers = 30
    caches = [(torch.randn(HKV, 8192, HEAD_DIM), torch.randn(HKV, 8192, HEAD_DIM))
              for _ in range(layers)]
    for ctx in (256, 1024, 4096):
        kvs = [(k[:, :ctx], v[:, :ctx]) for k, v in caches]
        variants: dict[str, Callable[[tuple[torch.Tensor, torch.Tensor]], Any]] = {
            "SDPA 4-D (flash)": lambda kv: F.scaled_dot_product_attention(
                q[None], kv[0][None], kv[1][None], scale=scale),
            "SDPA 3-D (math)": lambda kv: F.scaled_dot_product_attention(
                q, kv[0], kv[1], scale=scale),
            "bmm-softmax-bmm": lambda kv: torch.bmm(
                torch.softmax(torch.bmm(q, kv[0].transpose(1, 2)) * scale, -1), kv[1]),
            "inductor": lambda kv: inductor_attn(q, kv[0], kv[1]),
            "flash split 2": lambda kv: split(kv[0], kv[1], 2),
            "flash split 4": lambda kv: split(kv[0], kv[1], 4),
            "sum() of K and V": lambda kv: (kv[0].sum(), kv[1].sum()),
        }
        cells = [f"{v}: {median_s(cycling_kv(kvs, f), 60, 5) * 1e6:.0f}"
                 for v, f in variants.items()]
        print(f"ctx {ctx} (us per layer)  " + "  ".join(cells), flush=True)


def probe_overhead() -> None:
    @torch.compile(dynamic=False, fullgraph=True)
    def graph(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor,
              e: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return a + b, c * d + e

    xs = [torch.randn(576) for _ in range(5)]
    with torch.inference_mode():
        compiled = median_s(lambda: graph(*xs), 2000, 20)
        eager = median_s(lambda: (xs[0] + xs[1], xs[2] * xs[3] + xs[4]), 2000, 20)
    print(f"compiled call (2 tiny outputs): {compiled * 1e6:.1f} us; same 3 ops eager: "
          f"{eager * 1e6:.1f} us", flush=True)


def probe_profile(ctx: int, steps: int) -> None:
    from torch.profiler import ProfilerActivity, profile

    from specsched.engine.config import EngineConfig
    from specsched.engine.engine import LLMEngine
    from specsched.engine.layers.attention import build_metadata
    from specsched.engine.loading.registry import load_model

    lm = load_model("smollm2-135m")
    cfg = EngineConfig(max_num_seqs=1, max_model_len=ctx + 2 * steps + 64, compile=True,
                       num_threads=torch.get_num_threads())
    engine = LLMEngine(lm.config, lm.weights, cfg)
    ids = torch.full((1,), 5)

    def step(pos: int) -> None:
        engine.model(ids, build_metadata([0], [pos], [1]), engine.kv).argmax(-1)

    for i in range(3):
        step(ctx + i)  # compile and warm up
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for i in range(steps):
            step(ctx + 3 + i)
    print(f"compiled B=1 step at ctx {ctx}, {steps} steps (divide totals by {steps}):")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("probe", choices=["gemv", "attention", "overhead", "profile"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=1024, help="profile: context length")
    ap.add_argument("--steps", type=int, default=10, help="profile: profiled steps")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}, torch {torch.__version__}, "
          f"{args.threads} threads")
    if args.probe == "gemv":
        probe_gemv()
    elif args.probe == "attention":
        probe_attention()
    elif args.probe == "overhead":
        probe_overhead()
    else:
        probe_profile(args.ctx, args.steps)


if __name__ == "__main__":
    main()
