"""Simulator: adaptive / best static K over 18 scenarios x 20 seeds (FAST and CPU costs of
tests/core/test_adaptive.py). Used 2026-12-03 (seventeenth stop) with and without
notes/logs/2026-12-03-seventeenth-leave-one-out-with-changed-weight.diff applied
(`git apply` it, run, `git checkout src tests`): mean 0.9786 with it, 0.9789 without.

  .venv/bin/python notes/scripts/loo_sim.py
"""
import dataclasses, numpy as np, sys
sys.path.insert(0, 'tests/core')
from test_adaptive import *
def boxed(cost, depth):
    pts = tuple((b, c, depth) for b in (1, 4) for c in (512, 4096)) if depth else ()
    return dataclasses.replace(cost, batch_range=(1, 4), ctx_range=(512, 4096), verified_depths=pts)
rows = []
for cost_name, cost in (("FAST", FAST), ("CPU", CPU)):
  for (n, conc, ctx, out, acc, prior) in [(2,1,512,32,0.9,0.9),(2,1,4096,32,0.8,0.9),(2,1,512,32,0.6,0.9),(8,4,512,32,0.9,0.9),(8,4,4096,32,0.7,0.9),(32,16,4096,32,0.9,0.9),(8,4,4096,40,0.45,0.93),(8,4,4096,40,0.2,0.93),(2,1,4096,64,0.95,0.8)]:
    wl = workload(n, conc, ctx, out, acc)
    st = [np.mean([simulate(wl, PolicyConfig.constant(k).build(), cost, seed=s, noise=0.05).goodput for s in range(20)]) for k in range(5)]
    g = np.mean([run(wl, adaptive(boxed(cost, 4), prior, schedule=Schedule.constant(1)), cost, seed=s)[0] for s in range(20)])
    rows.append(g / max(st))
    print(cost_name, n, conc, ctx, out, acc, prior, "best K", int(np.argmax(st)), "adaptive/best %.3f" % (g / max(st)), flush=True)
print("mean %.4f min %.3f" % (np.mean(rows), min(rows)))
