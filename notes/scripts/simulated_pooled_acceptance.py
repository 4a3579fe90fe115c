"""Does the simulator's request model reproduce the pooled acceptance a text sample shows over a
short output? (fifty-second stop, issue 15.) Draws requests the way `draw_workload` does
(`request_acceptance` + `output_phases`) from a stored profile at one context, decodes each for
TOKENS tokens at static K with Bernoulli verifies (the simulator's `_accepted`), and prints the
pooled prefix4 (sum accepted / sum drafted at position 4) and pooled tokens per verify over
SAMPLES samples of PROMPTS requests: their mean and sd, to set beside the measured text seeds
(`acceptance_seed_bootstrap.py`). Pure simulation, no model. Since the fifty-third stop it draws
over each request's horizon, as `draw_workload` does (`workload_acceptance.request_acceptance`).

  PYTHONPATH=src .venv/bin/python notes/scripts/simulated_pooled_acceptance.py PROFILE CTX PROMPTS TOKENS K SAMPLES
"""
import random
import sys

import numpy as np

from specsched.planner.profile_io import load_profile
from specsched.planner.workload_acceptance import output_phases, request_acceptance
from specsched.planner.simulate import SimRequest, _accepted

path = sys.argv[1]
ctx, n, tokens, k, samples = (int(x) for x in sys.argv[2:7])
profile = load_profile(path)
rng = random.Random(0)
out = []
for _ in range(samples):
    d4 = a4 = verifies = 0
    for _ in range(n):
        a = request_acceptance(profile, ctx, None, rng, 0.5, tokens)  # as draw_workload
        req = SimRequest(ctx, tokens, output_phases(profile, ctx, a, tokens))
        g = 0
        while g < tokens:
            acc = _accepted(req.acceptance_at(g), k, rng)
            verifies += 1
            d4 += 1
            a4 += acc >= 4
            g += acc + 1
    out.append((a4 / d4, n * tokens / verifies))
o = np.asarray(out)
print(f"simulated ctx {ctx}, {n} requests x {tokens} tokens, K {k}, {samples} samples: pooled prefix4 "
      f"{o[:, 0].mean():.3f} sd {o[:, 0].std(ddof=1) / o[:, 0].mean():.1%}; pooled tokens/verify "
      f"{o[:, 1].mean():.2f} sd {o[:, 1].std(ddof=1) / o[:, 1].mean():.1%}")
