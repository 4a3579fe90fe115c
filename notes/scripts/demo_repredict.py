"""Diagnostic (2026-12-07, fifty-third stop): a stored demo's predictions made again by the
current package (its profile.json, experiment.yaml and the measured ratios in verdict.json), to
see what a simulator change does to the demo's predicted column before a new demo runs.
Prints per arm: the stored prediction, the new one, the measured e2e ratio, and the new error.

  PYTHONPATH=src .venv/bin/python notes/scripts/demo_repredict.py [--wave] DEMO_DIR...
"""
import json
import statistics
import sys
from pathlib import Path

from specsched.bench.load import load_experiment
from specsched.demo.predict import predicted
from specsched.planner import load_profile

waves = "--wave" in sys.argv
errors: list[float] = []
for d in (Path(a) for a in sys.argv[1:] if a != "--wave"):
    exp = load_experiment(d / "experiment.yaml")
    profile = load_profile(d / "profile.json")
    preds = predicted(exp, profile, "no-spec", waves)
    print(d.name)
    for row in json.loads((d / "verdict.json").read_text())["rows"]:
        if not row.get("ratio"):
            continue
        new = preds[(row["scenario"], row["arm"])].speedup.mean
        err = new / row["ratio"] - 1
        errors.append(err)
        print(f"  {row['scenario']:18} {row['arm']:11} stored {row['predicted_speedup']:.3f}  "
              f"new {new:.3f}  measured {row['ratio']:.3f}  new error {100 * err:+5.1f} %  "
              f"(stored {100 * (row['predicted_speedup'] / row['ratio'] - 1):+5.1f} %)")
if errors:
    print(f"every arm: n={len(errors)} mean |error| {100 * statistics.fmean(map(abs, errors)):.1f} %"
          f"  max {100 * max(map(abs, errors)):.1f} %  within +-7 % "
          f"{sum(abs(e) <= 0.07 for e in errors)}/{len(errors)}")
