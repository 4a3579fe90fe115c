"""Run vs profile step costs per K (forty-eighth stop): for each demo folder, the median of the
run's all-decoding steps with one K for every row (batch = the scenario's concurrency) over the
profile's median at that (B, ctx, K); a K = 0 ratio far from the drafting Ks' means the
profile's no-spec step drifted against them (every drafting arm's speedup mispredicted by it).
  python3 notes/scripts/step_cost_drift.py DEMO_DIR...
"""
import collections
import json
import statistics as st
import sys

for d in sys.argv[1:]:
    p = json.load(open(d + "/profile.json"))
    prof = {(t["batch_size"], t["ctx"], t["k"]): t["t_step_ms"] for t in p["timings"]}
    rows = [json.loads(line) for line in open(d + "/results.jsonl")]
    agg = collections.defaultdict(list)
    conc = {}
    for r in rows:
        if r.get("type") == "header":
            conc = {s["name"]: s["concurrency"] for s in r["experiment"]["scenarios"]}
        if r.get("type") != "trial" or r.get("warmup"):
            continue
        for ms, pf, ks, *_ in r["extra"]["steps"]:
            if pf == 0 and ks and len(ks) == conc[r["scenario"]] and len(set(ks)) == 1:
                agg[(r["scenario"], ks[0])].append(ms)
    out = []
    for (s, k), v in sorted(agg.items()):
        ctx = 512 if "512" in s else 4096
        t = prof.get((conc[s], ctx, k))
        if t and len(v) >= 20:
            out.append(f"{s} K{k} {st.median(v):.1f}/{t['median']:.1f} = {st.median(v) / t['median']:.3f}")
    print(d.rstrip("/").split("/")[-1])
    for line in out:
        print("  " + line)
