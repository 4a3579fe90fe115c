"""Issue 14, 2026-12-03: continuous batching where a joining request's prefill rows ride in a
step with the others' drafts, which the profile's fit (judge of the trust region) never saw.
Prints the static Ks' goodput, the adaptive policy's mean / best static, per-seed ratios, one
seed's step K sequence, and how many steps (after the slow start) drafted K = 1..3.

  .venv/bin/python notes/scripts/prefill_refill_sim.py      (at 6458696: 0.996x, 5 of 384)
  (at 6458696^ : 0.973x, 88 of 407 steps at K = 1..3)
"""
import dataclasses
import sys

import numpy as np

sys.path.insert(0, "tests/core")
from test_adaptive import FAST, Recorder, adaptive, profiled_fast  # noqa: E402

from specsched.planner.simulate import SimRequest, Workload, simulate  # noqa: E402
from specsched.policy import PolicyConfig  # noqa: E402
from specsched.schedule import Schedule  # noqa: E402

# truth: FAST plus a prefill term the profile never saw: 16 prefill tokens add ~60 % of a B=2 step
truth = dataclasses.replace(FAST, coef=(*FAST.coef[:6], 0.0015, 0.0))
wl = Workload(tuple(SimRequest(600, 20 + 7 * (i % 6), ((0, (0.95,) * 4),)) for i in range(24)), 4, prefill_tokens=16)
def g(cfg, s):
    rec = Recorder(cfg.build()); r = simulate(wl, rec, truth, seed=s, noise=0.05); return r.goodput, rec.decisions
seeds = range(6)
st = [np.mean([g(PolicyConfig.constant(k), s)[0] for s in seeds]) for k in range(5)]
print("statics", np.round(st, 1))
res = [g(adaptive(profiled_fast(), 0.95, schedule=Schedule.constant(4)), s) for s in seeds]
print("adaptive", np.mean([r[0] for r in res]) / max(st))
print(''.join(str(d.step_k) for d in res[0][1]))
print([round(r[0]/max(st),3) for r in res])
print(sum(d.step_k in (1,2,3) for r in res for d in r[1][2:]), sum(len(r[1]) for r in res))
