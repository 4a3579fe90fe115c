"""Twenty-eighth stop: per-K step time and tokens of each arm of one grid cell, from the trials'
step logs, and what the adaptive arms' first steps below K = 3 cost against static K3's rate
(the B1 x 512 figures in notes/adaptive.md). Its K = 0 rows are each request's last step with
one token left (room 0), not exploration probes (corrected in the twenty-ninth stop).
  .venv/bin/python notes/scripts/b1_tally.py benchmarks/results/adaptive/grid-drain-28-2026-12-05-avx2/grid.jsonl [CELL]"""
import json
import statistics
import sys

cell = sys.argv[2] if len(sys.argv) > 2 else "B1-ctx512"
with open(sys.argv[1]) as f:
    trials = [json.loads(line) for line in f]
trials = [t for t in trials if t.get("type") == "trial" and t["scenario"] == cell]
rate = {}
for arm in sorted({t["arm"] for t in trials}):
    tt = [t for t in trials if t["arm"] == arm]
    steps = [s for t in tt for s in t["extra"]["steps"] if s[2]]
    toks = sum(sum(acc) + len(ks) for _, _, ks, acc in steps)
    secs = sum(ms for ms, _, _, _, *_ in steps) / 1e3
    rate[arm] = toks / secs
    by: dict[int, list[tuple[float, int]]] = {}
    for ms, _, ks, acc, *_ in steps:
        by.setdefault(ks[0], []).append((ms, acc[0] + 1))
    print(f"{arm:17s} decode tok/s {toks / secs:.2f}",
          {k: (len(v), round(statistics.median(m for m, _ in v)), round(sum(x for _, x in v) / len(v), 2))
           for k, v in sorted(by.items())})
for arm in [a for a in rate if a.startswith("adaptive")]:
    lost = 0.0
    for t in [t for t in trials if t["arm"] == arm]:
        for ms, _, ks, acc, *_ in t["extra"]["steps"][1:]:
            if not ks or ks[0] >= 3:
                break
            lost += ms / 1e3 - (acc[0] + 1) / rate["static-K3"]
    print(f"{arm}: first steps below K = 3 cost {lost:.3f} s over its trials at static K3's rate")
