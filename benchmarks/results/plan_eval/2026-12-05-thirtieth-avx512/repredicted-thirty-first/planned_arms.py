"""The thirtieth stop's plan_eval cells (every K measured) under the plans 040f935 makes from the
same profile: measured speedup of the planned K and the simulator's |predicted/measured - 1|
(prediction_errors_040f935.json, from benchmarks/plan_eval_predict.py on a copy of ../).

    python3 planned_arms.py   (in this folder)
"""

import json
from pathlib import Path

ERRORS = json.loads(Path("prediction_errors_040f935.json").read_text())["cells"]
MEASURED = json.loads(Path("../plan_eval.json").read_text())["cells"]
PLANS = {"best static K": {1: [4] * 4, 4: [4] * 4},
         "batch-only": {1: [5] * 4, 4: [3] * 4},
         "2-D": {1: [5, 5, 4, 4], 4: [3, 3, 3, 4]}}
CTXS = [400, 900, 1900, 4000]


def main() -> None:
    err_by = {(c["batch_size"], c["ctx"]): c for c in ERRORS}
    meas_by = {(c["batch_size"], c["ctx"]): c for c in MEASURED}
    for name, plan in PLANS.items():
        errs = []
        for b in (1, 4):
            for i, c in enumerate(CTXS):
                k = plan[b][i]
                tok = meas_by[(b, c)]["measured_median_tok_s"]
                meas = tok[str(k)] / tok["0"]
                oracle = max(tok.values()) / tok["0"]
                err = err_by[(b, c)]["simulate"]["speedup_abs_err"][str(k)] if k else 0.0
                errs.append(err)
                print(f"{name:14s} B={b} ctx={c:5d} K={k} measured {meas:.3f} "
                      f"(oracle {oracle:.3f}) |err| {err:.3f}")
        print(name, "mean", round(sum(errs) / len(errs), 4), "max", round(max(errs), 3),
              "within 7%", sum(x <= 0.07 for x in errs))


main()
