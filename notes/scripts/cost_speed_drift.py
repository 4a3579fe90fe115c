"""K = 0 steps at 1.3-2x the cost prior's time, seen alone: T(K = 1) / T(0) of the online cost model after 30 steps, per cost_speed_sd (thirty-eighth stop). Run inside benchmarks/results/adaptive/b16-k0-cost-2026-12-06-thirty-eighth (next to b16.yaml and the grid profile: copy the profile there).
  ../../../../.venv/bin/python ../../../../notes/scripts/cost_speed_drift.py"""
import sys

from specsched.bench.load import load_experiment
exp = load_experiment('b16.yaml')
pc = [a for a in exp.arms if a.name == 'adaptive'][0].policy
p = pc.build()
cost = p.cost
ctx = [512] * 16
def T(k):
    return cost.predict(cost.features(ctx, [k] * 16))
print("prior T0 %.0f T1 %.0f ratio %.3f speed %.3f" % (1e3*T(0), 1e3*T(1), T(1)/T(0), cost.v[-1]))
for slow in (1.0, 1.3, 1.6, 2.0):
    p = pc.build(); cost = p.cost
    t0 = T(0)
    for i in range(30):
        cost.update(cost.features(ctx, [0]*16), slow * t0)
    print(f"K=0 steps at {slow}x: T0 {1e3*T(0):.0f} T1 {1e3*T(1):.0f} ratio {T(1)/T(0):.3f} speed {cost.v[-1]:.3f}")
import dataclasses
from specsched.policy.cost import OnlineStepCost
prior = pc.adaptive.cost_prior
for sd in (2.0, 5.0, 20.0):
    for slow in (1.3, 1.6, 2.0):
        cost = OnlineStepCost(prior, speed_sd=sd)
        t0 = T(0)
        t0 = cost.predict(cost.features(ctx, [0]*16))
        for i in range(30):
            cost.update(cost.features(ctx, [0]*16), slow * t0)
        T0 = cost.predict(cost.features(ctx, [0]*16)); T1 = cost.predict(cost.features(ctx, [1]*16))
        print(f"sd {sd} K=0 steps at {slow}x: T0 {1e3*T0:.0f} T1 {1e3*T1:.0f} ratio {T1/T0:.3f} speed {cost.v[-1]:.3f}")
