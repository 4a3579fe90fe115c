"""Twenty-eighth stop: the demo's ctx 512 (B=4) workload in the simulator, to see whether the
adaptive arm's gap to the 2-D plan is the drain tail (requests finishing unevenly, the last ones
running in a shrinking batch). Truth = the demo profile's cost fit (+-5 % noise per step), the
demo's prompt lengths, 8 requests x 40 tokens at concurrency 4; per-request acceptance drawn
around the demo texts' (0.93-0.97 by position) with `--spread` of the requests given a lower one.
  .venv/bin/python notes/scripts/tail_sim.py EXPERIMENT.yaml [seeds] [key=value ...]
(key=value: AdaptiveConfig overrides of the adaptive arm)."""
import ast
import dataclasses
import random
import sys

import numpy as np

from specsched.bench.load import load_experiment
from specsched.planner.simulate import SimRequest, Workload, simulate

exp = load_experiment(sys.argv[1])
seeds = int(sys.argv[2]) if len(sys.argv) > 2 and "=" not in sys.argv[2] else 40
kw = {a.split("=")[0]: ast.literal_eval(a.split("=")[1]) for a in sys.argv[2:] if "=" in a}
arms = {a.name: a for a in exp.arms}
ad = arms["adaptive"].policy
ad = dataclasses.replace(ad, adaptive=dataclasses.replace(ad.adaptive, **kw))
truth = ad.adaptive.cost_prior
PROMPTS = (433, 526, 418, 581, 422, 556, 557, 638)
BASE = (0.935, 0.957, 0.973, 0.974, 0.975)


def wl(seed: int) -> Workload:
    rng = random.Random(seed)
    reqs = []
    for p in PROMPTS:
        a = tuple(min(0.99, max(0.05, x + rng.gauss(0, 0.04))) for x in BASE)
        if rng.random() < 0.25:  # a request whose text the draft accepts less, for a while
            start = rng.randrange(0, 30)
            low = tuple(x * rng.uniform(0.4, 0.8) for x in a)
            reqs.append(SimRequest(p, 40, ((0, a), (start, low), (start + 10, a))))
        else:
            reqs.append(SimRequest(p, 40, ((0, a),)))
    return Workload(tuple(reqs), 4, prefill_tokens=8)


res: dict[str, list[float]] = {n: [] for n in ("no-spec", "2-D", "adaptive")}
tails: dict[str, list[float]] = {n: [] for n in res}
for s in range(seeds):
    w = wl(s)
    for name in res:
        pol = ad if name == "adaptive" else arms[name].policy
        r = simulate(w, pol.build(), truth, seed=s, noise=0.05)
        res[name].append(r.goodput)
for name in ("2-D", "adaptive"):
    ratio = np.array(res[name]) / np.array(res["no-spec"])
    print(f"{name:9s} / no-spec mean {ratio.mean():.3f} min {ratio.min():.3f}")
r = np.array(res["adaptive"]) / np.array(res["2-D"])
print(kw, f"adaptive / 2-D mean {r.mean():.3f} "
      f"[{np.percentile(r, 10):.3f}, {np.percentile(r, 90):.3f}]")
