"""The thirtieth stop's plan_eval cells (every K measured) under the plans HEAD (040f935) makes from the
same profile: measured speedup of the planned K and the simulator's |predicted/measured - 1|
(prediction_errors_040f935.json, from benchmarks/plan_eval_predict.py on a copy of ../).
  python3 planned_arms.py   (in this folder)"""
import json
e = {(c['batch_size'], c['ctx']): c for c in json.load(open('prediction_errors_040f935.json'))['cells']}
m = {(c['batch_size'], c['ctx']): c for c in json.load(open('../plan_eval.json'))['cells']}
plans = {'best static K': {1: [4]*4, 4: [4]*4}, 'batch-only': {1: [5]*4, 4: [3]*4}, '2-D': {1: [5,5,4,4], 4: [3,3,3,4]}}
ctxs = [400, 900, 1900, 4000]
for name, p in plans.items():
    errs = []
    for b in (1, 4):
        for i, c in enumerate(ctxs):
            k = p[b][i]; cell = m[(b, c)]
            meas = cell['measured_median_tok_s'][str(k)] / cell['measured_median_tok_s']['0']
            oracle = max(cell['measured_median_tok_s'][str(kk)] for kk in cell['measured_median_tok_s']) / cell['measured_median_tok_s']['0']
            err = e[(b, c)]['simulate']['speedup_abs_err'][str(k)] if k else 0.0
            errs.append(err)
            print(f"{name:14s} B={b} ctx={c:5d} K={k} measured {meas:.3f} (oracle {oracle:.3f}) |err| {err:.3f}")
    print(name, 'mean', round(sum(errs)/len(errs), 4), 'max', round(max(errs), 3), 'within 7%', sum(x <= 0.07 for x in errs))
