"""The phases bench (examples/experiments/adaptive_phases_recurring.yaml) on the simulator
(twenty-sixth stop, issue 14): 8 requests one after another (B = 1, ctx ~4096, 48 tokens),
alternating quote (the draft's conditional acceptance 0.38 / 0.11 / 0.03 at positions 1-3, the
probe of notes/scripts/phase_window_probe.py) and free text (0.91 / 0.91 / 0.80), on the cost
model fitted to the AVX2 EPYC's profile. Prints static K0..K5, the per-request-type oracle (the
best static K for quote requests and for free ones, each alone), and the adaptive arm with any
AdaptiveConfig field overridden from the command line, with its K histogram per request type.
  .venv/bin/python notes/scripts/phases_sim.py [field=value ...]   (from the repository root)"""
import ast
import collections
import os
import sys

import numpy as np

from specsched.planner import load_profile
from specsched.planner.adaptive_prior import adaptive_prior
from specsched.planner.simulate import SimRequest, Workload, simulate
from specsched.policy import AdaptiveConfig, PolicyConfig
from specsched.policy.config import PolicyKind
from specsched.schedule import Schedule

kw = {a.split("=")[0]: ast.literal_eval(a.split("=")[1]) for a in sys.argv[1:]}
# PROFILE / QUOTE / FREE from the environment (QUOTE, FREE: five comma-separated numbers) for
# another machine's costs or another seed's texts; the defaults are the AVX2 probe's
PROFILE = os.environ.get("PROFILE", "examples/experiments/profile_avx2_b1_b4_k5.json")
QUOTE = tuple(float(x) for x in os.environ.get("QUOTE", "0.38,0.11,0.03,0.03,0.03").split(","))
FREE = tuple(float(x) for x in os.environ.get("FREE", "0.91,0.91,0.80,0.80,0.80").split(","))
SEEDS = range(20)
cost = adaptive_prior(load_profile(PROFILE)).cost_prior
assert cost is not None


def wl(kinds: str) -> Workload:
    return Workload(tuple(SimRequest(4096, 48, ((0, QUOTE if c == "q" else FREE),))
                          for c in kinds), 1, prefill_tokens=1)


MIXED = wl("qfqfqfqf")


def seconds(w: Workload, policy_cfg: PolicyConfig) -> float:
    return float(np.mean([simulate(w, policy_cfg.build(), cost, seed=s, noise=0.05).seconds
                          for s in SEEDS]))


static = [seconds(MIXED, PolicyConfig.constant(k)) for k in range(6)]
quote = [seconds(wl("q"), PolicyConfig.constant(k)) for k in range(6)]
free = [seconds(wl("f"), PolicyConfig.constant(k)) for k in range(6)]
oracle = 4 * min(quote) + 4 * min(free)
print("static s:", " ".join(f"K{k} {t:.2f}" for k, t in enumerate(static)))
print(f"oracle {oracle:.2f} (quote K{int(np.argmin(quote))}, free K{int(np.argmin(free))});"
      f" oracle / best static {min(static) / oracle:.3f}")


class Rec:
    def __init__(self, p):  # type: ignore[no-untyped-def]
        self.p, self.hist = p, {"q": collections.Counter(), "f": collections.Counter()}

    max_k = property(lambda self: self.p.max_k)

    def decide(self, b):  # type: ignore[no-untyped-def]
        d = self.p.decide(b)
        for rid, k in zip(b.ids, d.num_spec_tokens, strict=True):
            self.hist["q" if rid % 2 == 0 else "f"][k] += 1
        return d

    def observe(self, o):  # type: ignore[no-untyped-def]
        self.p.observe(o)


cfg = adaptive_prior(load_profile(PROFILE), AdaptiveConfig(**kw), max_k=5)
pc = PolicyConfig(schedule=Schedule.constant(1), kind=PolicyKind.ADAPTIVE, adaptive=cfg,
                  per_request_k=True)
runs, hist = [], {"q": collections.Counter(), "f": collections.Counter()}
for s in SEEDS:
    rec = Rec(pc.build())
    runs.append(simulate(MIXED, rec, cost, seed=s, noise=0.05).seconds)
    for t in hist:
        hist[t].update(rec.hist[t])
a = float(np.mean(runs))
print(kw, f"adaptive {a:.2f} s; vs best static x{min(static) / a:.3f}, vs oracle x{oracle / a:.3f}")
for t in hist:
    print(" ", t, sorted(hist[t].items()))
