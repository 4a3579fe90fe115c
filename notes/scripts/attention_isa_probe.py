"""The native ragged attention kernel vs SDPA on this CPU: us per context token per step (30
layers of SmolLM2's 9 query / 3 KV heads of 64, B=1, one call per layer), q = 1, 4, 8.
Written 2026-12-02 when the AVX2-only AMD EPYC measured the kernel 5.6x slower than SDPA.

  .venv/bin/python notes/scripts/attention_isa_probe.py [CTX] [THREADS] [QS, e.g. 1,2,...,8]
(QS added in the nineteenth stop: where between q = 5 and 6 the AVX2 verify step jumps)"""
import statistics
import sys
import time

import torch

from specsched.engine.layers import cpu_kernels
from specsched.engine.layers.attention import build_metadata, ragged_attention

CTX = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
torch.set_num_threads(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
LAYERS, HQ, HKV, D = 30, 9, 3, 64
torch.manual_seed(0)
caches = [(torch.randn(1, HKV, CTX + 16, D), torch.randn(1, HKV, CTX + 16, D))
          for _ in range(LAYERS)]


def run(q: int, native: bool) -> float:
    meta = build_metadata([0], [CTX], [q])
    query = torch.randn(q, HQ, D)
    saved, saved_pref = cpu_kernels.available, cpu_kernels.preferred
    cpu_kernels.preferred = lambda: True  # type: ignore[assignment]  # the kernel on any ISA
    if not native:
        cpu_kernels.available = lambda a, b: False  # type: ignore[assignment]
    try:
        times = []
        for _ in range(7):
            t = time.perf_counter()
            for k, v in caches:
                ragged_attention(query, k, v, meta, D**-0.5)
            times.append(time.perf_counter() - t)
    finally:
        cpu_kernels.available, cpu_kernels.preferred = saved, saved_pref
    return 1e6 * statistics.median(times[2:]) / CTX


print(f"{torch.backends.cpu.get_cpu_capability()} threads {torch.get_num_threads()} ctx {CTX}")
QS = [int(x) for x in sys.argv[3].split(",")] if len(sys.argv) > 3 else [1, 4, 8]
for q in QS:
    print(f"q={q}: native {run(q, True):.2f} us/ctx-token, sdpa {run(q, False):.2f}", flush=True)
