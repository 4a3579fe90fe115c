"""Run vs profile step costs per K (forty-eighth stop): for each demo folder, the median of the
run's all-decoding steps with one K for every row (batch = the scenario's concurrency) over the
profile's median at that (B, ctx, K); a K = 0 ratio far from the drafting Ks' means the
profile's no-spec step drifted against them (every drafting arm's speedup mispredicted by it).
`--summary` (forty-ninth stop): one number per scenario instead, the K = 0 ratio over the mean
of the drafting Ks' ratios, minus 1 (negative: no-spec priced dear, drafting arms predicted
high by about as much), and their spread over every folder given.
  python3 notes/scripts/step_cost_drift.py [--summary] DEMO_DIR...
"""
import collections
import json
import statistics as st
import sys

summary = "--summary" in sys.argv
diffs = []
for d in [a for a in sys.argv[1:] if a != "--summary"]:
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
    ratios: dict[str, dict[int, float]] = collections.defaultdict(dict)
    for (s, k), v in sorted(agg.items()):
        ctx = 512 if "512" in s else 4096
        t = prof.get((conc[s], ctx, k))
        if t and len(v) >= 20:
            ratios[s][k] = st.median(v) / t["median"]
            out.append(f"{s} K{k} {st.median(v):.1f}/{t['median']:.1f} = {ratios[s][k]:.3f}")
    name = d.rstrip("/").split("/")[-1]
    if not summary:
        print(name)
        for line in out:
            print("  " + line)
        continue
    for s, rat in sorted(ratios.items()):
        if 0 in rat and len(rat) > 1:
            diffs.append(rat[0] / st.mean(v for k, v in rat.items() if k > 0) - 1)
            print(f"{name} {s}: {diffs[-1]:+.3f}")
if summary and len(diffs) > 1:
    print(f"{len(diffs)} scenarios: min {min(diffs):+.3f} max {max(diffs):+.3f} mean "
          f"{st.mean(diffs):+.3f} median {st.median(diffs):+.3f} sd {st.stdev(diffs):.3f}")
