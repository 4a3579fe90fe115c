"""Twenty-fourth stop: one slow step (factor 1.5 / 2.5 / 5 at simulated step 2..8) in the B=16 x
ctx 512 refill workload: cold adaptive / no-spec (mean, min of 6 seeds) and drafting steps per
trial (slow K = 0 step 3 at 2.5x: 0.845 and 27 steps before f615c44, 0.959 and 5 after).
  .venv/bin/python notes/scripts/hiccup_sim.py     (from the repository root)"""
import sys, dataclasses
sys.path.insert(0, 'tests/core')
from test_adaptive import *
boxed = dataclasses.replace(CPU, batch_range=(1, 4), ctx_range=(512, 4096))
w = Workload(tuple(SimRequest(512, 32, ((0, (0.95,) * 4),)) for _ in range(32)), 16, prefill_tokens=64, prefill_budget=400)
for factor in (1.5, 2.5, 5.0):
  for s in (2, 3, 4, 5, 6, 7, 8):
    gs, ns, k = [], [], 0
    for seed in range(6):
        t = lambda: SlowSteps(ComputeBound(CPU), factor, lambda st, s=s: st == s)
        n0 = simulate(w, PolicyConfig.constant(0).build(), t(), seed=seed, noise=0.05).goodput
        rec = Recorder(adaptive(boxed, 0.95, schedule=Schedule.constant(1)).build())
        g = simulate(w, rec, t(), seed=seed, noise=0.05).goodput
        gs.append(g / n0); k += sum(d.step_k > 0 for d in rec.decisions)
    print(factor, s, "%.3f" % np.mean(gs), "min %.3f" % min(gs), "drafting steps/trial %.1f" % (k / 6))
