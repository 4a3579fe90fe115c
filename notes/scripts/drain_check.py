"""Twenty-eighth stop: `drain.best_drain` against brute force on small random instances (with the
brute-force path on, and off so coordinate descent runs), and its time per call at 4-64
requests (K <= 5). The figures in notes/adaptive.md (exact in all but 5 of ~6 000 with
coordinate descent, at most 6.5 % off; 1.2 / ~3 / ~30 ms at 4 / 16 / 64) came from this code,
run while nothing else ran (07:2x UTC 2026-12-05, AVX2 EPYC).
  .venv/bin/python notes/scripts/drain_check.py     (from the repository root)"""
import sys
import time

import numpy as np

sys.path.insert(0, "tests/core")
import specsched.policy.drain as drain  # noqa: E402
from specsched.policy.optimize import best_per_request  # noqa: E402
from test_optimize import instance, vectors  # noqa: E402

for bf in (4096, 0):
    drain.BRUTE_FORCE_VECTORS = bf
    worst, bad, total = 1.0, 0, 0
    for seed in range(1000):
        for n in (2, 3, 4):
            for mk in (3, 5):
                if n == 4 and mk == 5:
                    continue
                t, b, c, s, caps, r = instance(seed, n, mk)
                st = best_per_request(t, float(b.sum()), c, s, caps).ks
                ks, sec = drain.best_drain(t, b, c, s, caps, r, lambda: st)
                br = min(float(drain.drain_seconds(t, b, c, s, v, r)) for v in vectors(caps))
                total += 1
                if sec > br * (1 + 1e-9):
                    bad, worst = bad + 1, max(worst, sec / br)
    print(f"BRUTE_FORCE_VECTORS={bf}: not optimal in {bad} of {total}, worst {worst:.4f}x")
    for n in (4, 8, 16, 64):
        t, b, c, s, caps, r = instance(1, n, 5)
        caps[:] = 5
        st = best_per_request(t, float(b.sum()), c, s, caps).ks
        t0 = time.perf_counter()
        for _ in range(20):
            drain.best_drain(t, b, c, s, caps, r, lambda: st)
        print(f"  n={n}: {(time.perf_counter() - t0) / 20 * 1e3:.2f} ms per call")
