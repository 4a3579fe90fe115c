"""Signed prediction error of each planned arm's speedup in a plan_eval folder (fifty-third
stop, issue 15): per cell and arm K, predicted / measured - 1 with the simulator's prediction in
prediction_errors.json (written by benchmarks/plan_eval_predict.py, or plan_eval.json's own);
then mean and max |error| over arms and over every cell x K.

  .venv/bin/python notes/scripts/plan_eval_arm_errors.py DIR
"""
import json
import statistics
import sys
from pathlib import Path

d = Path(sys.argv[1])
run = json.loads((d / "plan_eval.json").read_text())
pe = d / "prediction_errors.json"
errs = json.loads(pe.read_text()) if pe.exists() else run["prediction_errors"]
arms, every = [], []
for cell, pred in zip(run["cells"], errs["cells"], strict=True):
    m, p = cell["measured_median_tok_s"], pred["simulate"]["predicted_tok_s"]
    ks = sorted({a["k"] for a in cell["arms"].values()} - {0})
    for k in (x for x in m if x != "0"):
        e = (p[k] / p["0"]) / (m[k] / m["0"]) - 1
        every.append(abs(e))
        if int(k) in ks:
            arms.append(abs(e))
            print(f"B={cell['batch_size']:>2} ctx={cell['ctx']:>4} arm K{k}: predicted "
                  f"{p[k] / p['0']:.3f} measured {m[k] / m['0']:.3f} error {100 * e:+5.1f} %")
for name, xs in (("arms", arms), ("every cell x K", every)):
    print(f"{name}: n={len(xs)} mean |error| {100 * statistics.fmean(xs):.1f} % max "
          f"{100 * max(xs):.1f} % within +-7 % {sum(x <= 0.07 for x in xs)}/{len(xs)}")
