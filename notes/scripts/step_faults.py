"""Do the engine's steps page-fault, and does an arm change that (thirty-ninth stop: is the
adaptive arm's slower K = 0 forward at B16 x 512 the allocator's)? Runs an experiment's arms on
one scenario in rotation per replicate through `EngineBackend.run_trial` and prints per trial
the median K = 0 step, the process's minor / major page faults and voluntary / involuntary
context switches per step (getrusage around the trial), and the glibc heap top after it.
  .venv/bin/python notes/scripts/step_faults.py EXPERIMENT.yaml SCENARIO REPS [ARM ...]
(ARM: a subset of the experiment's arms, default all)."""
import resource
import statistics as st
import sys

from specsched.bench.backends.base import TrialSpec
from specsched.bench.backends.engine import EngineBackend
from specsched.bench.load import load_experiment
from specsched.bench.workload import request_shapes

exp_path, scen_name, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
exp = load_experiment(exp_path)
backend = EngineBackend.from_options(dict(exp.backend_options))
scen = exp.scenario(scen_name)
shapes = request_shapes(scen, exp.seed)
names = sys.argv[4:] or [a.name for a in exp.arms]


def usage() -> tuple[int, int, int, int]:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_minflt, u.ru_majflt, u.ru_nvcsw, u.ru_nivcsw


for rep in range(reps):
    order = names[rep % len(names):] + names[:rep % len(names)]
    for a in order:
        t = TrialSpec(arm=exp.arm(a), scenario=scen, shapes=shapes, replicate=rep, position=0,
                      warmup=False, seed=rep)
        before = usage()
        res = backend.run_trial(t)
        after = usage()
        steps = res.extra["steps"]
        n = len(steps)
        k0 = [ms for ms, pf, ks, _, *_ in steps if not pf and ks and max(ks) == 0]
        d = [(y - x) / n for x, y in zip(before, after, strict=True)]
        print(f"rep {rep} {a:12s} K0 median {st.median(k0) if k0 else float('nan'):6.1f} ms "
              f"({len(k0)}/{n} steps)  per step: minflt {d[0]:7.1f} majflt {d[1]:4.1f} "
              f"vcsw {d[2]:5.1f} ivcsw {d[3]:5.1f}", flush=True)
