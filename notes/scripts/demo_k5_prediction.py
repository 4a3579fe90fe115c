"""Why the demo over-predicted K=5 at ctx 4096 (twenty-fourth stop, issue 15): the simulator's
steps, seconds per step and decoding-batch mix for the twenty-second stop's clean-clone demo
(its profile, its long scenario), to set beside the measured trials (22.6 steps at ~1.0 s; the
per-step batches in notes/logs/2026-12-04-twentyfourth-demo-k5-batches.txt).
  .venv/bin/python notes/scripts/demo_k5_prediction.py      (from the repository root)"""
import json, statistics
from specsched.planner import load_profile
from specsched.planner.predict import predict_arms, _runs
from specsched.planner.cost_fit import fit_cost
from specsched.planner.workload import Arrival, DistKind, LengthDist, WorkloadSpec
from specsched.policy import PolicyConfig
D = "benchmarks/results/demo/2026-12-04-twentysecond-clean-clone-0cd1caf/"
prof = load_profile(D + "profile.json")
fit = fit_cost(prof)
print("fit rms_rel", fit.rms_rel, "coef", fit.model.coef)
for name, (lo, hi) in (("long", (3840 + 128, 3840 + 384)), ("short", (256 + 128, 256 + 384))):
    spec = WorkloadSpec(8, 4, LengthDist(DistKind.UNIFORM, (lo, hi)), LengthDist(DistKind.FIXED, (40,)),
                        Arrival.CLOSED_LOOP, None, 16)
    for k in (0, 3, 5):
        runs = _runs(prof, spec, PolicyConfig.constant(k), range(16), fit, 0.0, 0.5)
        steps = statistics.fmean(r.steps for r, _ in runs)
        secs = statistics.fmean(r.seconds for r, _ in runs)
        print(name, "K", k, "steps %.1f" % steps, "s/step %.3f" % (secs / steps), "wall %.2f" % secs)
from collections import Counter
from specsched.planner.simulate import simulate
from specsched.planner.workload import draw_workload
spec = WorkloadSpec(8, 4, LengthDist(DistKind.UNIFORM, (3968, 4224)), LengthDist(DistKind.FIXED, (40,)), Arrival.CLOSED_LOOP, None, 16)
class Rec:
    def __init__(self, p): self.p, self.sizes = p, Counter()
    max_k = property(lambda self: self.p.max_k)
    def decide(self, b):
        self.sizes[sum(b.is_decoding(i) for i in range(len(b)))] += 1
        return self.p.decide(b)
    def observe(self, o): self.p.observe(o)
tot = Counter(); secs = 0
for seed in range(16):
    wl = draw_workload(spec, prof, seed, 0.5)
    rec = Rec(PolicyConfig.constant(5).build())
    res = simulate(wl, rec, fit.model, seed=seed)
    tot.update(rec.sizes)
print("decoding batch sizes per step, 16 seeds:", sorted(tot.items()))
print("accept draws first request:", draw_workload(spec, prof, 0, 0.5).requests[0].phases)
