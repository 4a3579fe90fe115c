"""Per planned arm and cell of a plan_eval run: predicted vs measured speedup over no-spec, the
error against issue 15's +-7 %, and the replicate-to-replicate range of the measured speedup
(paired per replicate: K's tok/s over no-spec's in the same replicate), so a miss can be read
against the measurement's own noise. A diagnostic script (thirty-third stop), not the package.

  .venv/bin/python notes/scripts/plan_eval_arms.py DIR [DIR...]
"""
import json
import statistics
import sys
from pathlib import Path

ARMS = ("best static K", "best batch-only", "2-D plan")

for d in sys.argv[1:]:
    res = json.loads((Path(d) / "plan_eval.json").read_text())
    print(f"{d}: reps {res['reps']}, tokens {res['tokens']}, requests/slot "
          f"{res.get('requests_per_slot')}")
    print("  B   ctx  arm              K  pred   meas   err     per-rep speedups")
    errs: dict[str, list[float]] = {a: [] for a in ARMS}
    for cl in res["cells"]:
        m = cl["measured_tok_s"]
        for arm in ARMS:
            a = cl["arms"][arm]
            k = str(a["k"])
            reps = [x / y for x, y in zip(m[k], m["0"], strict=True)]
            err = a["predicted_speedup"] / a["measured_speedup"] - 1
            errs[arm].append(err)
            flag = " MISS" if abs(err) > 0.07 else ""
            print(f"  {cl['batch_size']:>2} {cl['ctx']:>5}  {arm:<15} {k:>2}  "
                  f"{a['predicted_speedup']:.3f}  {a['measured_speedup']:.3f}  {err:+.3f}  "
                  f"[{', '.join(f'{r:.3f}' for r in reps)}]{flag}")
    for arm, e in errs.items():
        within = sum(abs(x) <= 0.07 for x in e)
        print(f"  {arm:<15} mean |err| {statistics.fmean(abs(x) for x in e):.3f}, max "
              f"{max(abs(x) for x in e):.3f}, mean signed {statistics.fmean(e):+.3f}, within "
              f"+-7 % {within} of {len(e)}")
    allp = [abs(x) for e in errs.values() for x in e]
    print(f"  planned arms: mean |err| {statistics.fmean(allp):.3f}")
