"""Simulator: the adaptive policy against the best static K when one step in 25 runs 1.5x slower
(a diagnostic script, not part of the package; the test is
tests/core/test_adaptive.py::test_one_slow_step_does_not_hold_a_well_accepting_cell_at_k1).

  .venv/bin/python notes/scripts/hiccup_sim.py

Prints, per (hiccup factor, first hiccup step): adaptive / best static K (means of 6 seeds), every
static K / the best, and seed 0's per-step K. Used 2026-12-03 (fifteenth stop) before and after
89d9734: 0.875 / 0.927 / 0.934 -> 0.965 / 0.972 / 0.977 with the first hiccup at step 2 / 3 / 5."""
import sys

sys.path.insert(0, "tests/core")
import numpy as np
from test_adaptive import (
    FAST,
    PolicyConfig,
    Schedule,
    SlowSteps,
    adaptive,
    hiccups,
    profiled_fast,
    run,
    simulate,
    workload,
)

wl = workload(4, 1, 512, 40, 0.95)
for factor, first in [(1.0, 2), (1.5, 2), (1.5, 3), (1.5, 5)]:
    seeds = range(6)

    def truth(factor: float = factor, first: int = first) -> SlowSteps:
        return hiccups(FAST, 25, factor, first)

    statics = [float(np.mean([simulate(wl, PolicyConfig.constant(k).build(), truth(), seed=s,
                                       noise=0.05).goodput for s in seeds])) for k in range(5)]
    runs = [run(wl, adaptive(profiled_fast(), 0.95, schedule=Schedule.constant(1)), truth(),
                seed=s) for s in seeds]
    got = float(np.mean([g for g, _ in runs]))
    best = max(statics)
    print(factor, first, round(got / best, 3), [round(s / best, 3) for s in statics],
          [d.step_k for d in runs[0][1]])
