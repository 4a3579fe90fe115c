"""The K = 0 fast path's bound (`step_costs.drafting_bound`) beside the uniform-K ceiling
(`ceiling_gain`) per grid cell, from a profile's cost prior as the adaptive arm builds it
(forty-seventh stop). Bound <= 1 + min_gain: the fast path fires there at the first step.
  .venv/bin/python notes/scripts/drafting_bound_check.py PROFILE.json [MAX_K]
"""
import sys

from specsched.planner import load_profile
from specsched.planner.adaptive_prior import adaptive_prior
from specsched.policy import AdaptiveConfig, PolicyConfig
from specsched.policy.adaptive import AdaptivePolicy
from specsched.policy.step_costs import ceiling_gain, drafting_bound

max_k = int(sys.argv[2]) if len(sys.argv) > 2 else 5
cfg = adaptive_prior(load_profile(sys.argv[1]), AdaptiveConfig(max_k=max_k), max_k=max_k)
policy = AdaptivePolicy(cfg, PolicyConfig.constant(0).build(), True)
print(f"min_gain {cfg.min_gain}: fires where bound <= {1 + cfg.min_gain:.3f}")
for b in (1, 4, 16):
    for c in (512, 4096):
        costs = policy.costs([c] * b)
        print(f"B{b} x {c}: ceiling {ceiling_gain(costs):.3f} bound {drafting_bound(costs):.3f}")
