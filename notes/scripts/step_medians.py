"""Median engine step time of no-spec vs adaptive trials of one scenario, paired (a diagnostic
script, 2026-12-01; run then with a trial policy change that was not kept):

  .venv/bin/python notes/scripts/step_medians.py examples/experiments/adaptive_grid_prefix.yaml B16-ctx512
"""
import statistics
import sys
import time

import specsched.engine.engine as E
from specsched.bench.backends.base import TrialSpec
from specsched.bench.backends.engine import EngineBackend
from specsched.bench.load import load_experiment
from specsched.bench.workload import request_shapes

exp = load_experiment(sys.argv[1])
backend = EngineBackend.from_options(dict(exp.backend_options))
scen = exp.scenario(sys.argv[2])
shapes = request_shapes(scen, exp.seed)
orig_step = E.LLMEngine.step
times: list[float] = []


def step(self, *a, **k):  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    r = orig_step(self, *a, **k)
    times.append(time.perf_counter() - t)
    return r


E.LLMEngine.step = step  # type: ignore[method-assign]
for rep in range(2):
    for a in ("no-spec", "adaptive", "no-spec", "adaptive"):
        times.clear()
        res = backend.run_trial(TrialSpec(arm=exp.arm(a), scenario=scen, shapes=shapes,
                                          replicate=rep, position=0, warmup=False, seed=rep))
        print(a, rep, round(res.wall_s, 2), res.k_histogram, "median step ms",
              round(statistics.median(times) * 1000, 1), "n", len(times))
