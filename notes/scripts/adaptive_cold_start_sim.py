# Simulator table behind notes/adaptive.md (2026-12-02 cold start; 20 seeds). Run from the repo root:
#   .venv/bin/python notes/scripts/adaptive_cold_start_sim.py
import dataclasses, numpy as np, sys
sys.path.insert(0, 'tests/core')
from test_adaptive import *
def boxed(cost, depth):
    pts = tuple((b, c, depth) for b in (1, 4) for c in (512, 4096)) if depth else ()
    return dataclasses.replace(cost, batch_range=(1, 4), ctx_range=(512, 4096), verified_depths=pts)
for cost_name, cost in (("FAST", FAST), ("CPU", CPU)):
  for (n, conc, ctx, out, acc) in [(2,1,512,32,0.9),(2,1,4096,32,0.9),(8,4,512,32,0.9),(8,4,4096,32,0.9),(32,16,4096,32,0.9),(8,4,4096,40,0.45),(8,4,4096,40,0.2)]:
    wl = workload(n, conc, ctx, out, acc)
    st = [np.mean([simulate(wl, PolicyConfig.constant(k).build(), cost, seed=s, noise=0.05).goodput for s in range(20)]) for k in range(5)]
    res = []
    for depth, ev, sk, ud in ((0, 8.0, 1, 1.0), (4, 4.0, 1, 1.0), (4, 4.0, 1, 0.7)):
        g = np.mean([run(wl, adaptive(boxed(cost, depth), acc, schedule=Schedule.constant(1), slow_start_evidence=ev, start_k=sk, untested_decay=ud), cost, seed=s)[0] for s in range(20)])
        res.append(g / max(st))
    print(cost_name, n, conc, ctx, out, acc, "best K", int(np.argmax(st)), "K0/best %.3f" % (st[0]/max(st)), " ".join("%.3f" % r for r in res))
