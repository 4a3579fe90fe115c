"""How precise plan_eval's own measurement is (issue 15): per cell and K, the speedup vs no-spec
of each replicate (its own texts), the planner's prediction, and whether the prediction lies
inside the replicates' range; then the spread between replicates as a per-text sd of log
speedup (sd of a replicate's mean x sqrt(texts per replicate)) and the number of texts a cell
would need for a 95 % interval of +-h.

    python3 notes/scripts/plan_eval_noise.py DIR [DIR ...]   # DIR/plan_eval.json
    KS=3,5 python3 notes/scripts/plan_eval_noise.py DIR      # only these Ks in the pooled sd
"""
import json
import math
import os
import statistics as st
import sys

ks_env = os.environ.get("KS")
for path in sys.argv[1:]:
    with open(os.path.join(path, "plan_eval.json")) as f:
        d = json.load(f)
    rps = d.get("requests_per_slot") or 1
    reps = d.get("reps")
    print(f"== {path}: reps {reps}, requests per slot {rps}, tokens {d.get('tokens')}")
    per_text_var = {}  # B -> [per-text variance of log speedup estimates]
    inside = total = 0
    for c in d["cells"]:
        b, ctx = c["batch_size"], c["ctx"]
        m, p = c["measured_tok_s"], c["predicted_tok_s"]
        if len(m["0"]) < 2:
            continue
        line = []
        for k in sorted(m, key=int):
            if k == "0":
                continue
            sp = [x / y for x, y in zip(m[k], m["0"])]  # [reps]
            meas = c["measured_median_tok_s"][k] / c["measured_median_tok_s"]["0"]
            pred = p[k] / p["0"]
            ok = min(sp) <= pred <= max(sp)
            inside += ok
            total += 1
            line.append(f"K{k} {pred / meas - 1:+.1%} [{min(sp) / meas - 1:+.0%},"
                        f"{max(sp) / meas - 1:+.0%}]{'' if ok else '*'}")
            if ks_env is None or k in ks_env.split(","):
                logs = [math.log(s) for s in sp]
                per_text_var.setdefault(b, []).append(st.variance(logs) * rps * b)
        print(f"B{b} x {ctx:>4}: " + "  ".join(line))
    print(f"prediction inside the replicates' range: {inside} of {total} (* = outside)")
    for b, v in sorted(per_text_var.items()):
        sd = math.sqrt(st.mean(v))
        need = {h: math.ceil((1.96 * sd / math.log(1 + h)) ** 2) for h in (0.035, 0.07)}
        per_rep = rps * b
        print(f"B{b}: per-text sd of log speedup {sd:.3f} (from {len(v)} cell x K, "
              f"{per_rep} texts per replicate); a replicate mean's sd "
              f"{sd / math.sqrt(per_rep):.3f}; texts per cell for a 95 % interval of "
              f"+-3.5 % / +-7 %: {need[0.035]} / {need[0.07]}")
