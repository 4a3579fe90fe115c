"""Standard error of a demo's measured tokens per verify over its replicates (static-K5 arm), the
sampling noise a prediction is judged against. Used 2026-12-02 on
benchmarks/results/demo/2026-12-02-clean-clone-0a53925 (ctx 512: 4.1 %, ctx 4096: 9.3 %).

  python3 notes/scripts/demo_acceptance_se.py DEMO_RESULTS_DIR [ARM]"""
import json
import math
import statistics as st
import sys

d, arm = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "static-K5"
rows: dict[str, list[float]] = {}
for line in open(d + "/results.jsonl"):
    r = json.loads(line)
    if r.get("type") != "trial" or r["arm"] != arm:
        continue
    a = r["extra"]["acceptance"]
    drafted, accepted = a["drafted_per_position"], a["accepted_per_position"]
    rows.setdefault(r["scenario"], []).append(1 + sum(x / drafted[0] for x in accepted))
for s, v in rows.items():
    se = st.stdev(v) / math.sqrt(len(v)) / st.mean(v)
    print(s, [round(x, 2) for x in v], f"mean {st.mean(v):.2f} se {100 * se:.1f}%")
