"""Diagnostic (2026-12-03, nineteenth stop): would the demo's predictions be closer if the
simulator's step cost were the fitted linear model corrected by the profile's own residuals
(T = fit(x) * (1 + r(B, mean ctx, max K)), r interpolated linearly in B and context between the
profiled points, clamped at the box's edges, exact at profiled Ks)? Re-predicts stored demos
(profile.json + results.jsonl) both ways and prints each arm's predicted / measured speedup.

  .venv/bin/python notes/scripts/residual_cost_eval.py benchmarks/results/demo/<dir> ...
"""
import statistics
import sys
from pathlib import Path

import numpy as np

from demo_dir import load_demo
from specsched.demo import predict as demo_predict
from specsched.planner import predict as planner_predict
from specsched.planner.cost_fit import fit_cost


def _interp(xs, ys, x):
    return float(np.interp(x, xs, ys))


class Corrected:
    def __init__(self, fit, profile):
        self.model = fit.model
        self.bs = sorted(profile.grid.batch_sizes)
        self.cs = sorted(profile.grid.contexts)
        self.ks = sorted(profile.grid.ks)
        self.r = {(r.batch_size, r.ctx, r.k): r.measured_ms / r.predicted_ms - 1
                  for r in fit.residuals}

    def features(self, ctxs, ks, prefill):
        return (self.model.features(ctxs, ks, prefill), list(ctxs), list(ks))

    def rel(self, b, c, k):
        def at_k(kk):
            rows = [_interp(self.cs, [self.r.get((bb, cc, kk), 0.0) for cc in self.cs], c)
                    for bb in self.bs]
            return _interp(self.bs, rows, b)
        return _interp(self.ks, [at_k(kk) for kk in self.ks], k)

    def predict(self, feat):
        x, ctxs, ks = feat
        t = self.model.predict(x)
        if not ctxs:
            return t
        return t * (1 + self.rel(len(ctxs), statistics.fmean(ctxs), max(ks)))


def run(d: Path, corrected: bool):
    exp, profile, trials = load_demo(d)
    orig = planner_predict.fit_cost
    if corrected:
        class F:
            def __init__(self, p):
                f = orig(p)
                self.model = Corrected(f, p)
                self.batch_range, self.ctx_range = f.batch_range, f.ctx_range
                self.rel_rmse = f.rms_rel
            def __getattr__(self, n):
                return getattr(orig(profile), n)
        planner_predict.fit_cost = F
    try:
        preds = demo_predict.predicted(exp, profile, "no-spec", waves=False)
    finally:
        planner_predict.fit_cost = orig
    out = {}
    for scen in exp.scenarios:
        tp = {}
        for arm in exp.arms:
            ts = [t for t in trials if t["scenario"] == scen.name and t["arm"] == arm.name]
            tp[arm.name] = statistics.fmean(t["metrics"]["output_tok_s"] for t in ts)
        for arm in exp.arms:
            if arm.name == "no-spec":
                continue
            out[(scen.name, arm.name)] = (preds[(scen.name, arm.name)].speedup.mean,
                                          tp[arm.name] / tp["no-spec"])
    return out


for arg in sys.argv[1:]:
    d = Path(arg)
    try:
        a, b = run(d, False), run(d, True)
    except Exception as e:  # older formats
        print(f"{d.name}: skipped ({type(e).__name__}: {e})"[:160])
        continue
    ea = [abs(p / m - 1) for p, m in a.values()]
    eb = [abs(p / m - 1) for p, m in b.values()]
    print(f"{d.name}: fit mean {100 * statistics.fmean(ea):.1f}% max {100 * max(ea):.1f}% "
          f"within7 {sum(e <= 0.07 for e in ea)}/{len(ea)} | corrected mean "
          f"{100 * statistics.fmean(eb):.1f}% max {100 * max(eb):.1f}% "
          f"within7 {sum(e <= 0.07 for e in eb)}/{len(eb)}")
    for key in a:
        print(f"   {key[0]:18} {key[1]:10} meas {a[key][1]:.3f} fit {a[key][0]:.3f} "
              f"corr {b[key][0]:.3f}")
