"""
Diagnostic (2026-12-03, fourteenth stop): is the target's step superlinear in verify rows at
B=4 (K=3: 16 rows, K=4: 20 rows)? Times the engine's fp32 linears (`make_linear`, one thread)
of SmolLM2-135M's shapes at 1..24 rows, median of interleaved rounds.
Run: .venv/bin/python notes/scripts/verify_rows_probe.py
"""
import statistics
import time

import torch

from specsched.engine.layers.linear import make_linear

torch.set_num_threads(1)
shapes = {"qkv": (576 + 2 * 192, 576), "o": (576, 576), "gate_up": (2 * 1536, 576),
          "down": (576, 1536), "lm_head": (49152, 576)}
layers = {n: make_linear(torch.randn(o, i) * 0.02) for n, (o, i) in shapes.items()}
rows = [1, 4, 8, 12, 16, 17, 20, 24]
res: dict[tuple[str, int], list[float]] = {}
for _ in range(7):
    for m in rows:
        x = torch.randn(m, 576)
        xs = {n: (torch.randn(m, shapes[n][1])) for n in shapes}
        for n, lin in layers.items():
            t0 = time.perf_counter()
            for _ in range(20 if n != "lm_head" else 3):
                lin(xs[n])
            dt = (time.perf_counter() - t0) / (20 if n != "lm_head" else 3)
            res.setdefault((n, m), []).append(1e6 * dt)
print("rows " + " ".join(f"{m:>8d}" for m in rows))
for n in shapes:
    print(f"{n:8s}" + " ".join(f"{statistics.median(res[(n, m)]):8.1f}" for m in rows) + "  us")
per_layer = {m: sum(statistics.median(res[(n, m)]) for n in ("qkv", "o", "gate_up", "down"))
             for m in rows}
print("layer   " + " ".join(f"{per_layer[m]:8.1f}" for m in rows) + "  us (x30 layers)")
