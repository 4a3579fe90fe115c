"""Where does the adaptive arm's slower K = 0 forward come from (thirty-eighth stop: at B16 x 512 it
drafted nothing yet its forwards ran ~3-5 % slower than a static K = 0 arm holding the same
drafter)? One engine, arms in rotation per replicate: the static K = 0 drafter arm; the adaptive
arm; the adaptive arm with its decide replaced by "K = 0 for all" (no numpy at all) and observe
a no-op ("stub"); with only observe a no-op ("no-observe"); with only decide stubbed
("no-decide"). Paired per replicate: each arm's median K = 0 step over the static arm's.
  .venv/bin/python notes/scripts/k0_forward_split.py EXPERIMENT.yaml SCENARIO REPS
(EXPERIMENT needs arms `k0-drafter` and `adaptive`; ARMS=k0-drafter,adaptive (env): a subset, the
first one the reference)."""
import math
import os
import statistics as st
import sys

from specsched.bench.backends.base import TrialSpec
from specsched.bench.backends.engine import EngineBackend
from specsched.bench.load import load_experiment
from specsched.bench.workload import request_shapes
from specsched.policy import KDecision
from specsched.policy.adaptive import AdaptivePolicy

exp_path, scen_name, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
exp = load_experiment(exp_path)
backend = EngineBackend.from_options(dict(exp.backend_options))
scen = exp.scenario(scen_name)
shapes = request_shapes(scen, exp.seed)
mode = {"decide": True, "observe": True}
real_decide, real_observe = AdaptivePolicy.decide, AdaptivePolicy.observe


def decide(self, batch):  # type: ignore[no-untyped-def]
    if mode["decide"]:
        return real_decide(self, batch)
    return KDecision((0,) * len(batch), 0)


def observe(self, outcome):  # type: ignore[no-untyped-def]
    if mode["observe"]:
        real_observe(self, outcome)


AdaptivePolicy.decide, AdaptivePolicy.observe = decide, observe  # type: ignore[method-assign]
arms = {"k0-drafter": ("k0-drafter", True, True), "adaptive": ("adaptive", True, True),
        "stub": ("adaptive", False, False), "no-observe": ("adaptive", True, False),
        "no-decide": ("adaptive", False, True)}
names = [a for a in arms if a in os.environ.get("ARMS", ",".join(arms)).split(",")]
logs: dict[str, list[float]] = {a: [] for a in names}
for rep in range(reps):
    order = names[rep % len(names):] + names[:rep % len(names)]
    med = {}
    for a in order:
        arm, mode["decide"], mode["observe"] = arms[a]
        t = TrialSpec(arm=exp.arm(arm), scenario=scen, shapes=shapes, replicate=rep, position=0,
                      warmup=False, seed=rep)
        res = backend.run_trial(t)
        k0 = [ms for ms, pf, ks, *_ in res.extra["steps"] if not pf and ks and max(ks) == 0]
        med[a] = st.median(k0)
    for a in names:
        logs[a].append(math.log(med[a] / med["k0-drafter"]))
    print(f"rep {rep}: " + "  ".join(f"{a} {med[a]:.1f}" for a in names), flush=True)
for a in names[1:]:
    m, sd = st.mean(logs[a]), st.stdev(logs[a])
    print(f"{a:11s} / k0-drafter median K = 0 step: {math.exp(m):.4f} +- "
          f"{1.96 * sd / math.sqrt(reps):.4f} (n={reps}, normal 95 % half-width)")
