"""One number per demo scenario (forty-ninth stop): the run / profile ratio of its K = 0 step
medians over the mean of that ratio across its drafting Ks, minus 1 (all-decoding steps with one
K for every row, >= 20 steps per K). Negative: the profile priced no-spec dear against the
drafting steps, so every drafting arm's predicted speedup came out high by about as much.
  python3 notes/scripts/step_cost_drift_summary.py DEMO_DIR...
"""
import collections
import json
import statistics as st
import sys

diffs = []
for d in sys.argv[1:]:
    p = json.load(open(d + "/profile.json"))
    prof = {(t["batch_size"], t["ctx"], t["k"]): t["t_step_ms"]["median"] for t in p["timings"]}
    agg = collections.defaultdict(list)
    conc = {}
    for line in open(d + "/results.jsonl"):
        r = json.loads(line)
        if r.get("type") == "header":
            conc = {s["name"]: s["concurrency"] for s in r["experiment"]["scenarios"]}
        if r.get("type") != "trial" or r.get("warmup"):
            continue
        for ms, pf, ks, *_ in r["extra"]["steps"]:
            if pf == 0 and ks and len(ks) == conc[r["scenario"]] and len(set(ks)) == 1:
                agg[(r["scenario"], ks[0])].append(ms)
    for s in sorted({k[0] for k in agg}):
        ctx = 512 if "512" in s else 4096
        rat = {k: st.median(v) / prof[(conc[s], ctx, k)]
               for (ss, k), v in agg.items() if ss == s and len(v) >= 20}
        if 0 in rat and len(rat) > 1:
            diffs.append(rat[0] / st.mean(v for k, v in rat.items() if k > 0) - 1)
            print(f"{d.rstrip('/').split('/')[-1]} {s}: {diffs[-1]:+.3f}")
print(f"{len(diffs)} scenarios: min {min(diffs):+.3f} max {max(diffs):+.3f} mean "
      f"{st.mean(diffs):+.3f} median {st.median(diffs):+.3f} sd {st.stdev(diffs):.3f}")
