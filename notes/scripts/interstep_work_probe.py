"""Does the adaptive policy's work BETWEEN engine steps slow the next forward (thirty-eighth stop)?
At B16 x 512 the adaptive arm drafted nothing yet its K = 0 forwards ran 1.3 % slower than
no-spec's (20 replicates). Here both arms are no-spec; one of them runs, before every engine step
and outside the step's clock, a separate adaptive policy's decide + observe on a synthetic
16-request batch (the same numpy work as the policy's, ~1 ms). Paired per replicate: the median
K = 0 step of the busy arm over the plain one's.
  .venv/bin/python notes/scripts/interstep_work_probe.py EXPERIMENT.yaml SCENARIO REPS"""
import math
import random
import statistics as st
import sys

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2] / "benchmarks"))
import specsched.engine.engine as E  # noqa: E402
from policy_overhead import _outcome  # noqa: E402
from specsched.bench.backends.base import TrialSpec  # noqa: E402
from specsched.bench.backends.engine import EngineBackend  # noqa: E402
from specsched.bench.load import load_experiment  # noqa: E402
from specsched.bench.workload import request_shapes  # noqa: E402
from specsched.policy import BatchState  # noqa: E402

exp_path, scen_name, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
exp = load_experiment(exp_path)
backend = EngineBackend.from_options(dict(exp.backend_options))
scen = exp.scenario(scen_name)
shapes = request_shapes(scen, exp.seed)
busy_policy = next(a for a in exp.arms if a.name == "adaptive").policy.build()
rng = random.Random(0)
state = {"busy": False, "n": 0}
orig_step = E.LLMEngine.step


def step(self):  # type: ignore[no-untyped-def]
    if state["busy"]:
        n = state["n"] = state["n"] + 1
        b = BatchState(tuple(512 + n % 32 for _ in range(16)), (512,) * 16, (31 - n % 32,) * 16,
                       tuple(range(16 * (n // 32), 16 * (n // 32) + 16)))
        busy_policy.observe(_outcome(b, busy_policy.decide(b).num_spec_tokens, rng))
    return orig_step(self)


E.LLMEngine.step = step
ratios = []
for rep in range(reps):
    med = {}
    for busy in ((False, True) if rep % 2 == 0 else (True, False)):
        state["busy"] = busy
        t = TrialSpec(arm=exp.arm("no-spec"), scenario=scen, shapes=shapes, replicate=rep,
                      position=0, warmup=False, seed=rep)
        res = backend.run_trial(t)
        k0 = [ms for ms, pf, ks, _, *_ in res.extra["steps"] if not pf and ks and max(ks) == 0]
        med[busy] = st.median(k0)
    ratios.append(math.log(med[True] / med[False]))
    print(f"rep {rep}: median K = 0 step plain {med[False]:.1f} ms, busy {med[True]:.1f} ms, "
          f"ratio {med[True] / med[False]:.3f}", flush=True)
m, sd = st.mean(ratios), st.stdev(ratios)
print(f"busy / plain median K = 0 step: {math.exp(m):.4f} +- {1.96 * sd / math.sqrt(len(ratios)):.4f}"
      f" (n={len(ratios)}, normal 95 % half-width)")
