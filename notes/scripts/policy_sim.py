"""Simulator sweep of AdaptiveConfig settings (twentieth stop): adaptive / best static K over 24
scenarios (loo_sim.py's 18 + 3 more per cost model) x 20 seeds, with any AdaptiveConfig field
overridden from the command line. Prints the 24 ratios, then the mean and min.
  .venv/bin/python notes/scripts/policy_sim.py                 # the defaults
  .venv/bin/python notes/scripts/policy_sim.py start_k=4 optimism_z=1.0   (optimism_z: only with the diff in notes/logs)
"""
import ast
import dataclasses
import sys

import numpy as np

sys.path.insert(0, 'tests/core')
from test_adaptive import *
kw = {a.split("=")[0]: ast.literal_eval(a.split("=")[1]) for a in sys.argv[1:]}
def boxed(cost, depth):
    pts = tuple((b, c, depth) for b in (1, 4) for c in (512, 4096)) if depth else ()
    return dataclasses.replace(cost, batch_range=(1, 4), ctx_range=(512, 4096), verified_depths=pts)
rows = []
SC = [(2,1,512,32,0.9,0.9),(2,1,4096,32,0.8,0.9),(2,1,512,32,0.6,0.9),(8,4,512,32,0.9,0.9),(8,4,4096,32,0.7,0.9),(32,16,4096,32,0.9,0.9),(8,4,4096,40,0.45,0.93),(8,4,4096,40,0.2,0.93),(2,1,4096,64,0.95,0.8),
      (2,1,4096,64,0.55,0.9),(2,1,512,64,0.3,0.9),(4,1,4096,32,0.7,0.7)]
for cost_name, cost in (("FAST", FAST), ("CPU", CPU)):
  for (n, conc, ctx, out, acc, prior) in SC:
    wl = workload(n, conc, ctx, out, acc)
    st = [np.mean([simulate(wl, PolicyConfig.constant(k).build(), cost, seed=s, noise=0.05).goodput for s in range(20)]) for k in range(5)]
    g = np.mean([run(wl, adaptive(boxed(cost, 4), prior, schedule=Schedule.constant(1), **kw), cost, seed=s)[0] for s in range(20)])
    rows.append(g / max(st))
print(" ".join("%.3f" % r for r in rows))
print(kw, "mean %.4f min %.3f" % (np.mean(rows), min(rows)))
