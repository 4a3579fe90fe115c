"""Diagnostic (2026-12-06, fortieth stop): the cost shape (log measured / fitted per profiled point)
of every demo profile with the grid B {1, 4} x ctx {512, 4096} x K 0..5: mean and SD per point
over profiles (structure repeats, noise does not).

  .venv/bin/python notes/scripts/shape_spread.py DEMO_DIR...
"""
import sys
from pathlib import Path

import numpy as np

from specsched.planner import load_profile
from specsched.planner.cost_fit import fit_cost

GRID = ((1, 4), (512, 4096), (0, 1, 2, 3, 4, 5))
rows = []
for d in sys.argv[1:]:
    path = Path(d) / "profile.json"
    if not path.exists():
        continue
    fit = fit_cost(load_profile(path))
    shape = fit.model.shape
    if shape is None or (shape.batch_sizes, shape.contexts, shape.ks) != GRID:
        continue
    rows.append(np.asarray(shape.log_ratio))
    print(f"{Path(d).name[:50]:50} fit rms {fit.rms_rel:.3f}")
a = np.stack(rows)  # [profiles, B, ctx, K]
mean, sd = a.mean(0), a.std(0, ddof=1)
print(f"{len(rows)} profiles; per point: mean +- SD over profiles of log(measured / fitted)")
for i, b in enumerate(GRID[0]):
    for j, c in enumerate(GRID[1]):
        print(f"B={b} ctx={c}: " + " ".join(f"K{k} {mean[i, j, k]:+.3f}+-{sd[i, j, k]:.3f}"
                                           for k in GRID[2]))
noise, structure = float(a.var(0, ddof=1).mean()), float((mean**2).mean())
print(f"mean noise variance {noise:.5f}, structure (mean^2) {structure:.5f}, "
      f"shrinkage weight structure / (structure + noise) {structure / (structure + noise):.2f}")
