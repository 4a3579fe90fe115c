"""Diagnostic (2026-12-06, fortieth stop): would the demos' predictions have been closer to what
they measured with the cost model's profiled shape (`CostShape`, measured / fitted per profiled
point) scaled by a weight w (log ratio x w: 0 = the plane alone, 1 = the profile's own step at a
profiled point, as shipped)? Re-predicts every demo directory given (profile.json + results.jsonl
+ verdict.json) with each w and prints |predicted / measured - 1| per arm and summaries. Offline:
no engine, no timing.

  .venv/bin/python notes/scripts/shape_weight_eval.py W1,W2,... DEMO_DIR...
"""
import dataclasses
import json
import statistics
import sys
from pathlib import Path

import numpy as np

import specsched.planner.predict as predict_mod
from specsched.demo.predict import predicted
from specsched.planner.cost_fit import fit_cost as real_fit_cost

sys.path.insert(0, str(Path(__file__).parent))
from demo_dir import load_demo

weights = [float(w) for w in sys.argv[1].split(",")]
dirs = [Path(a) for a in sys.argv[2:]]


def fit_with(w: float):  # type: ignore[no-untyped-def]
    def fit(profile):  # type: ignore[no-untyped-def]
        f = real_fit_cost(profile)
        shape = f.model.shape
        if shape is None:
            return f
        lr = (np.asarray(shape.log_ratio) * w).tolist()
        scaled = dataclasses.replace(shape, log_ratio=tuple(tuple(tuple(x) for x in b) for b in lr))
        return dataclasses.replace(f, model=dataclasses.replace(f.model, shape=scaled))
    return fit


errs: dict[float, list[float]] = {w: [] for w in weights}
per_dir: dict[float, list[float]] = {w: [] for w in weights}
for d in dirs:
    try:
        verdict = json.loads((d / "verdict.json").read_text())
        exp, profile, _ = load_demo(d)
    except Exception as exc:  # an older layout: skip it, say so
        print(f"{d.name}: skipped ({type(exc).__name__}: {exc})"[:160])
        continue
    meas = {(r["scenario"], r["arm"]): r["ratio"] for r in verdict["rows"] if r.get("ratio")}
    line = []
    for w in weights:
        predict_mod.fit_cost = fit_with(w)  # type: ignore[assignment]
        try:
            preds = predicted(exp, profile, "no-spec", waves=False)
        except Exception as exc:
            print(f"{d.name}: w={w} failed ({type(exc).__name__}: {exc})"[:160])
            break
        e = [abs(preds[key].speedup.mean / m - 1) for key, m in meas.items() if key in preds]
        errs[w].extend(e)
        per_dir[w].append(statistics.fmean(e))
        line.append(f"w={w}: mean {100 * statistics.fmean(e):4.1f}% "
                    f"within7 {sum(x <= 0.07 for x in e)}/{len(e)}")
    print(f"{d.name[:58]:58} " + " | ".join(line))
    sys.stdout.flush()
for w in weights:
    e = errs[w]
    if e:
        print(f"w={w}: {len(e)} arms, mean |err| {100 * statistics.fmean(e):.2f}%, median "
              f"{100 * statistics.median(e):.2f}%, within 7% {sum(x <= 0.07 for x in e)}, "
              f"dirs mean-of-means {100 * statistics.fmean(per_dir[w]):.2f}%")
