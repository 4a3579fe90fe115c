"""Per cell of an adaptive grid run (`specsched bench examples/experiments/adaptive_grid_prefix*.yaml`):
each arm's output tok/s vs no-spec (geometric mean of the replicates' paired ratios), the
adaptive arm over the best static K, and the adaptive arm's K histogram (steps). A diagnostic
script (2026-12-02).
Run: .venv/bin/python notes/scripts/grid_table.py RESULTS.jsonl
"""
import collections
import json
import math
import sys

tok: dict[tuple[str, str], dict[int, float]] = collections.defaultdict(dict)
hist: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("type") != "trial" or r.get("failed") or r.get("warmup"):
        continue
    tok[(r["scenario"], r["arm"])][r["replicate"]] = r["metrics"]["output_tok_s"]
    if r["arm"] == "adaptive":
        hist[r["scenario"]].update({int(k): v for k, v in (r.get("k_histogram") or {}).items()})
scens = list(dict.fromkeys(s for s, _ in tok))
arms = list(dict.fromkeys(a for _, a in tok if a != "no-spec"))
print("| cell | n | " + " | ".join(arms) + " | adaptive / best static | adaptive K histogram |")
for s in scens:
    base = tok[(s, "no-spec")]
    g = {}
    for a in arms:
        logs = [math.log(v / base[rep]) for rep, v in tok[(s, a)].items() if rep in base]
        g[a] = math.exp(sum(logs) / len(logs)) if logs else float("nan")
    statics = {a: v for a, v in g.items() if a.startswith("static")}
    best = max(statics, key=statics.get)
    cells = " | ".join(f"**{g[a]:.3f}**" if a == best else f"{g[a]:.3f}" for a in arms)
    h = dict(sorted(hist[s].items()))
    print(f"| {s} | {len(base)} | {cells} | {g['adaptive'] / g[best]:.3f} | {h} |")
