"""Twenty-fourth stop: cold adaptive vs no-spec / best static K on a two-wave B=16 workload with a
chunked-prefill budget (None / 400 / 200 tokens), ComputeBound truth, CPU prior boxed to B <= 4
(0.940 -> 0.977 at budget 400, ctx 512). -v: K per request per step (seed 0).
  .venv/bin/python notes/scripts/refill_sim.py [-v]     (from the repository root)"""
import sys, dataclasses
sys.path.insert(0, 'tests/core')
from test_adaptive import *
boxed = dataclasses.replace(CPU, batch_range=(1, 4), ctx_range=(512, 4096))
def wl(budget, n=32, conc=16, ctx=512, out=32, acc=0.95):
    return Workload(tuple(SimRequest(ctx, out, ((0, (acc,) * 4),)) for _ in range(n)), conc,
                    prefill_tokens=64, prefill_budget=budget)
truth = ComputeBound(CPU)
for budget in (None, 400, 200):
  for ctx in (512,4096):
    w = wl(budget, ctx=ctx)
    seeds = range(8)
    st = [float(np.mean([simulate(w, PolicyConfig.constant(k).build(), truth, seed=s, noise=0.05).goodput for s in seeds])) for k in range(5)]
    g = float(np.mean([simulate(w, adaptive(boxed, 0.95, schedule=Schedule.constant(1)).build(), truth, seed=s, noise=0.05).goodput for s in seeds]))
    print(budget, ctx, "vs nospec %.3f vs best %.3f (best K%d)" % (g/st[0], g/max(st), int(np.argmax(st))))
if "-v" in sys.argv:
    w = wl(400)
    rec = Recorder(adaptive(boxed, 0.95, schedule=Schedule.constant(1)).build())
    simulate(w, rec, truth, seed=0, noise=0.05)
    for d in rec.decisions: print("".join(map(str, d.num_spec_tokens)))
