"""Simulator: the adaptive arm vs the static Ks when a run of steps is `factor` times slower (a slow
minute), B=1, two sequential 64-token requests, means of 10 seeds (2026-12-02 twelfth stop).
  .venv/bin/python notes/scripts/slow_minute_sim.py   (from the repository root)"""
import sys, numpy as np, dataclasses
sys.path.insert(0, "tests/core")
from test_adaptive import *
class Patch:
    """truth = base, times `factor` for simulated steps [lo, hi)."""
    def __init__(self, base, lo, hi, factor):
        self.base, self.lo, self.hi, self.factor, self.n = base, lo, hi, factor, 0
        self.features = base.features
    def predict(self, x):
        f = self.factor if self.lo <= self.n < self.hi else 1.0
        self.n += 1
        return self.base.predict(x) * f
wl = workload(2, 1, 512, 64, 0.93)
for lo, hi, fac in [(0,0,1.0), (8, 14, 1.35), (8, 12, 1.3), (10, 20, 1.5)]:
    gs, hist = [], Counter()
    for s in range(10):
        rec = Recorder(adaptive(profiled_fast(), 0.93, schedule=Schedule.constant(1)).build())
        r = simulate(wl, rec, Patch(FAST, lo, hi, fac), seed=s, noise=0.05)
        gs.append(r.goodput); hist.update(r.k_histogram)
    st = [np.mean([simulate(wl, PolicyConfig.constant(k).build(), Patch(FAST, lo, hi, fac), seed=s, noise=0.05).goodput for s in range(10)]) for k in range(5)]
    print(lo, hi, fac, "adaptive/best static %.3f" % (np.mean(gs)/max(st)), dict(sorted(hist.items())), np.round(st,1))
