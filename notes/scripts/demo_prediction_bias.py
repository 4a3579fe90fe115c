"""Diagnostic (2026-12-06, fortieth stop): the demos' predictions against their measurements, per
arm, as recorded (each demo's verdict.json: the prediction it printed before it measured, and
its paired speedup): signed and absolute mean error, and how many within +-7 %.

  .venv/bin/python notes/scripts/demo_prediction_bias.py DEMO_DIR...
"""
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

errors: dict[str, list[float]] = defaultdict(list)
demos = 0
for d in sys.argv[1:]:
    verdict = Path(d) / "verdict.json"
    if not verdict.exists():
        continue
    demos += 1
    for row in json.loads(verdict.read_text())["rows"]:
        if row.get("ratio") and row.get("predicted_speedup"):
            errors[row["arm"]].append(row["predicted_speedup"] / row["ratio"] - 1)
every = [x for xs in errors.values() for x in xs]
print(f"{demos} demos")
for arm, xs in [*errors.items(), ("every arm", every)]:
    print(f"{arm:12} n={len(xs):3}  signed mean {100 * statistics.fmean(xs):+5.1f} %  abs mean "
          f"{100 * statistics.fmean(abs(x) for x in xs):4.1f} %  within +-7 % "
          f"{sum(abs(x) <= 0.07 for x in xs)}/{len(xs)}")
