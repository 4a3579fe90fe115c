"""How much a demo run's own drafting / no-spec step-time ratio moves between replicates (forty-
ninth stop): per scenario, median step of the deepest static K over the median no-spec step, per
replicate (each ~1.5 min of the run), from the no-spec, static, batch-only and 2-D arms'
all-decoding steps with one K for every row. A profile unit measured in one short window
carries about this spread.
  python3 notes/scripts/step_ratio_by_replicate.py DEMO_DIR...
"""
import collections
import json
import statistics as st
import sys

ARMS = ("no-spec", "static-K5", "static-K4", "static-K3", "batch-only", "2-D")
for d in sys.argv[1:]:
    conc = {}
    agg = collections.defaultdict(list)
    for line in open(d + "/results.jsonl"):
        r = json.loads(line)
        if r.get("type") == "header":
            conc = {s["name"]: s["concurrency"] for s in r["experiment"]["scenarios"]}
        if r.get("type") != "trial" or r.get("warmup") or r["arm"] not in ARMS:
            continue
        for ms, pf, ks, *_ in r["extra"]["steps"]:
            if pf == 0 and ks and len(ks) == conc[r["scenario"]] and len(set(ks)) == 1:
                agg[(r["scenario"], r["replicate"], ks[0])].append(ms)
    out = []
    for s in sorted({k[0] for k in agg}):
        reps = sorted({k[1] for k in agg if k[0] == s})
        kmax = max(k[2] for k in agg if k[0] == s)
        rat = [st.median(agg[(s, r, kmax)]) / st.median(agg[(s, r, 0)]) for r in reps
               if agg.get((s, r, kmax)) and agg.get((s, r, 0))]
        out.append(f"{s} K{kmax}/K0 sd/mean {st.stdev(rat) / st.mean(rat):.3f} "
                   f"({' '.join(f'{x:.2f}' for x in rat)})")
    print(d.rstrip("/").split("/")[-1], " | ".join(out))
