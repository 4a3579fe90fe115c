"""B=4 no-spec steps: the demo experiment's trial ITL vs the profiler's step, back to back (a diagnostic, 2026-12-02
twelfth stop; reads /tmp/s12/demo_b4/experiment.yaml: pass another demo folder's by editing it)."""
import statistics, sys, time
from specsched.bench.backends.base import TrialSpec
from specsched.bench.backends.engine import EngineBackend
from specsched.bench.load import load_experiment
from specsched.bench.workload import request_shapes
from specsched.planner import ProfileGrid
from specsched.tune.engine_profile import EngineProfileConfig, EngineProfiler
from specsched.engine.spec.config import SpeculativeConfig

exp = load_experiment("/tmp/s12/demo_b4/experiment.yaml")
backend = EngineBackend.from_options(dict(exp.backend_options))
for name in ("short-ctx512-B4", "long-ctx4096-B4"):
    scen = exp.scenario(name)
    shapes = request_shapes(scen, exp.seed)
    for rep in range(2):
        t = TrialSpec(arm=exp.arm("no-spec"), scenario=scen, shapes=shapes, replicate=rep,
                      position=0, warmup=False, seed=rep)
        res = backend.run_trial(t)
        itl = [x for r in res.requests for x in r.itl_s]
        print(name, "trial rep", rep, "wall/steps ms", round(1000 * res.wall_s / res.extra["num_steps"], 1),
              "itl median ms", round(1000 * statistics.median(itl), 1), "shapes", shapes[:3], flush=True)
grid = ProfileGrid((1, 4), (512, 4096), (0,))
spec = SpeculativeConfig(window=256)
cfg = EngineProfileConfig(speculative=spec, rounds=2)
shared = EngineProfiler(cfg, grid, backend.llm)
for c in (512, 4096):
    for tp in shared.timings(4, c, [0]):
        print("profiler on the experiment's engine B4 ctx", c, "median ms", round(tp.t_step_ms.median, 1), flush=True)
own = EngineProfiler(cfg, grid)
for c in (512, 4096):
    for tp in own.timings(4, c, [0]):
        print("profiler on its own engine B4 ctx", c, "median ms", round(tp.t_step_ms.median, 1), flush=True)
