"""Per cell of an adaptive grid run (`specsched bench examples/experiments/adaptive_grid_*.yaml`):
each arm's output tok/s vs no-spec (geometric mean of the replicates' paired ratios), each
adaptive arm (name starting `adaptive`) over the best static K, and its K histogram (steps).

Two "best static" references: the in-sample best (the static arm with the highest geomean — the
maximum of five noisy estimates, biased upward when they are close) and the leave-one-out best
(for each replicate, the static K that was best on the OTHER replicates, measured on this one:
what an operator who picked K from earlier runs would get). A diagnostic script (2026-12-02).
Run: .venv/bin/python notes/scripts/grid_table.py RESULTS.jsonl
"""
import collections
import json
import math
import sys


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


tok: dict[tuple[str, str], dict[int, float]] = collections.defaultdict(dict)
hist: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("type") != "trial" or r.get("failed") or r.get("warmup"):
        continue
    tok[(r["scenario"], r["arm"])][r["replicate"]] = r["metrics"]["output_tok_s"]
    if r["arm"].startswith("adaptive"):
        hist[(r["scenario"], r["arm"])].update(
            {int(k): v for k, v in (r.get("k_histogram") or {}).items()})
scens = list(dict.fromkeys(s for s, _ in tok))
arms = list(dict.fromkeys(a for _, a in tok if a != "no-spec"))
adaptive = [a for a in arms if a.startswith("adaptive")]
print("| cell | n | " + " | ".join(arms) + " | "
      + " | ".join(f"{a} / best static (LOO)" for a in adaptive) + " |")
for s in scens:
    base = tok[(s, "no-spec")]
    ratio = {a: {rep: v / base[rep] for rep, v in tok[(s, a)].items() if rep in base}
             for a in arms}
    g = {a: geomean(list(ratio[a].values())) for a in arms}
    statics = [a for a in arms if a.startswith("static")]
    best = max(statics, key=lambda a: g[a])
    reps = sorted(set.intersection(*(set(ratio[a]) for a in statics)))
    loo = []  # per replicate: the static arm best on the other replicates, measured here
    for rep in reps:
        pick = max(statics, key=lambda a: geomean([ratio[a][q] for q in reps if q != rep]))
        loo.append(ratio[pick][rep])
    g_loo = geomean(loo)
    cells = " | ".join(f"**{g[a]:.3f}**" if a == best else f"{g[a]:.3f}" for a in arms)
    rel = " | ".join(f"{g[a] / g[best]:.3f} ({g[a] / g_loo:.3f})" for a in adaptive)
    print(f"| {s} | {len(base)} | {cells} | {rel} |")
print()
for (s, a), h in hist.items():
    print(f"{s} {a}: K histogram {dict(sorted(h.items()))}")
