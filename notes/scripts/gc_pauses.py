"""Python's cyclic garbage collector during engine trials (thirty-eighth stop): per arm, how many
collections of each generation ran and how long they took in all, against the trial's wall.
Hypothesis tested: the adaptive policy's per-step allocations trigger full collections of the
large heap (torch, the model, numpy) while no-spec's steps do not.
  .venv/bin/python notes/scripts/gc_pauses.py EXPERIMENT.yaml SCENARIO ARM[,ARM...] REPS [--freeze]
(--freeze: gc.freeze() once the engine is loaded and warm, as vLLM does after start-up.)"""
import gc
import sys
import time

from specsched.bench.backends.base import TrialSpec
from specsched.bench.backends.engine import EngineBackend
from specsched.bench.load import load_experiment
from specsched.bench.workload import request_shapes

exp_path, scen_name, arms, reps = sys.argv[1], sys.argv[2], sys.argv[3].split(","), int(sys.argv[4])
exp = load_experiment(exp_path)
backend = EngineBackend.from_options(dict(exp.backend_options))
scen = exp.scenario(scen_name)
shapes = request_shapes(scen, exp.seed)
stats = {"n": [0, 0, 0], "s": [0.0, 0.0, 0.0]}
start = [0.0]


def hook(phase: str, info: dict) -> None:
    if phase == "start":
        start[0] = time.perf_counter()
    else:
        g = info["generation"]
        stats["n"][g] += 1
        stats["s"][g] += time.perf_counter() - start[0]


gc.callbacks.append(hook)
frozen = False
for rep in range(reps):
    for a in arms:
        if "--freeze" in sys.argv and rep == 1 and not frozen:  # after one warm round
            gc.collect()
            gc.freeze()
            frozen = True
        stats["n"], stats["s"] = [0, 0, 0], [0.0, 0.0, 0.0]
        t = TrialSpec(arm=exp.arm(a), scenario=scen, shapes=shapes, replicate=rep, position=0,
                      warmup=False, seed=rep)
        res = backend.run_trial(t)
        print(f"rep {rep} {a:10s} wall {res.wall_s:6.2f} s  gc count gen0/1/2 {stats['n']}  "
              f"ms {[round(1e3 * s, 1) for s in stats['s']]}  frozen {gc.get_freeze_count()}",
              flush=True)
