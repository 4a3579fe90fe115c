"""How much of a demo's measured acceptance is its texts' sampling (fiftieth stop): per scenario,
each request's tokens per step at K >= 4 (static arms, `bench.step_rows.request_places`), the
variance between the two requests of one document (within) and of the replicates' document
means; var(doc means) = s_b^2 + s_w^2 / 2 gives the documents' own part s_b^2. Pooled over the
demo folders given (their texts are seeded: the same documents recur, so s_b^2 is a rough
figure from few documents).
  .venv/bin/python notes/scripts/demo_text_variance.py DEMO_DIR...
"""
import collections
import json
import statistics as st
import sys
from pathlib import Path

from specsched.bench.step_rows import request_places

within: dict[str, list[float]] = collections.defaultdict(list)
between: dict[str, list[float]] = collections.defaultdict(list)
for d in sys.argv[1:]:
    docs: dict[str, list[list[float]]] = collections.defaultdict(list)
    for line in Path(d, "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("type") != "trial" or r.get("warmup") or r.get("failed"):
            continue
        if not r["arm"].startswith("static"):
            continue
        steps = r["extra"]["steps"]
        outs = [q["num_output_tokens"] for q in r["requests"]]
        places = request_places(steps, outs) if len(outs) >= 2 else None
        if places is None:
            continue
        per: dict[int, list[int]] = collections.defaultdict(list)
        for row, pl in zip(steps, places):
            for k, a, i in zip(row[2], row[3], pl):
                if k >= 4:
                    per[i].append(a + 1)
        means = [st.mean(v) for _, v in sorted(per.items()) if len(v) >= 3]
        if len(means) >= 2:
            docs[r["scenario"]].append(means)
    for scenario, reps in docs.items():
        key = scenario.split("-")[1]
        within[key] += [st.variance(m) for m in reps]
        if len(reps) >= 3:
            between[key].append(st.variance([st.mean(m) for m in reps]))
for key in within:
    w, b = st.mean(within[key]), st.mean(between[key])
    print(f"{key}: within-document var {w:.3f} (n {len(within[key])}), var of document means "
          f"{b:.3f} (n {len(between[key])}), documents' own part {max(0.0, b - w / 2):.3f}")
