# The superlinear B=16 case with and without untested_decay, 10 seeds (notes/adaptive.md, 2026-12-02):
#   .venv/bin/python notes/scripts/adaptive_superlinear_sim.py
import sys, dataclasses, numpy as np
sys.path.insert(0,'tests/core')
from test_adaptive import *
truth = Superlinear(CPU)
wl = workload(32, 16, 512, 32, 0.93)
statics = [np.mean([simulate(wl, PolicyConfig.constant(k).build(), truth, seed=s, noise=0.05).goodput for s in range(10)]) for k in range(5)]
print([round(x,1) for x in statics])
for ud in (1.0, 0.7):
  for nb in (True,):
    g=[simulate(wl, adaptive(dataclasses.replace(CPU, batch_range=(1, 4), ctx_range=(512, 4096)), 0.93, schedule=Schedule.constant(1), untested_decay=ud).build(), truth, seed=s, noise=0.05).goodput for s in range(10)]
    print(ud, round(np.mean(g)/statics[1],3))
g=[simulate(wl, adaptive(CPU, 0.93, schedule=Schedule.constant(1), trust_inside_box=True).build(), truth, seed=s, noise=0.05).goodput for s in range(10)]
print('trusted', round(np.mean(g)/statics[1],3))
