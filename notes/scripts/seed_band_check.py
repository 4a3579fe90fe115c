"""The pooled prefix rate's standard error (`planner.acceptance_horizon.pooled_rates`, the ratio
estimator's linearization) on each text seed of `acceptance_seed_bootstrap.py`'s JSON, beside
the spread of the pooled rate across seeds (fifty-second stop, issue 15). No model.

  PYTHONPATH=src .venv/bin/python notes/scripts/seed_band_check.py SEEDS.json
"""
import json
import sys

import numpy as np

from specsched.planner.acceptance_horizon import pooled_rates
from specsched.planner.profile import HorizonCounts

obj = json.loads(open(sys.argv[1]).read())
k = obj["k"]
rates, rels = [], []
for seed, rows in obj["rows"].items():
    h = HorizonCounts(obj["tokens"], tuple(tuple(r[0]) for r in rows), tuple(tuple(r[1]) for r in rows))
    rate, rel, n = pooled_rates(h, k)
    rates.append(rate)
    rels.append(rel)
    print(f"seed {seed}: pooled prefix {np.round(rate, 3).tolist()} rel se prefix4 {rel[3]:.1%} ({n} requests)")
r, e = np.asarray(rates), np.asarray(rels)
sd = r.std(axis=0, ddof=1) / r.mean(axis=0)
rms = np.sqrt((e**2).mean(axis=0))
print("per prefix position: sd across seeds " + " ".join(f"{x:.1%}" for x in sd)
      + "; rms of the within-seed se " + " ".join(f"{x:.1%}" for x in rms))
