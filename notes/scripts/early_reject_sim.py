"""Requests whose first drafts are rejected, then accepted (thirty-sixth stop, issue 14): the
closing demo of 481d71a lost to its 2-D arm at B4 x 4096 (0.959, seed 11) where three
first-wave requests rejected their first drafts, were cut to K = 0-1 and climbed back one step
at a time while accepting everything. 8 requests of 40 tokens at B = 4, acceptance `early`
for their first 6 tokens, then 0.95; that demo's profile as prior and truth. Prints adaptive
/ the best static K per (ctx, early); AdaptiveConfig overrides from the command line.
Found: defaults 0.966 (512) / 0.969 (4096) at early 0.3; idle_decay 0.8 (a request turned off
drifts back 4x faster) 0.998 / 0.992 but costs the phases bench (shuffled: 1.197 -> 1.142x
the best static K; AVX2: 1.064 -> 1.039), where quoting requests are then retried too often.
MIXED=1 (env): only three of every four requests start poorly (the demo's replicate 0):
defaults 0.960 / 0.960, idle_decay 0.8 1.002 / 0.977, weak_idle.py (WEAK_N=5) 0.971 / 0.977.
  .venv/bin/python notes/scripts/early_reject_sim.py [field=value ...]"""
import ast, os, sys
import numpy as np
from specsched.planner import load_profile
from specsched.planner.adaptive_prior import adaptive_prior
from specsched.planner.simulate import SimRequest, Workload, simulate
from specsched.policy import AdaptiveConfig, PolicyConfig
from specsched.policy.config import PolicyKind
from specsched.schedule import Schedule
kw = {a.split("=")[0]: ast.literal_eval(a.split("=")[1]) for a in sys.argv[1:]}
MIXED = os.environ.get('MIXED') == '1'
D='benchmarks/results/demo/2026-12-06-thirty-sixth-avx512-clean-clone-481d71a/'
prof = load_profile(D+'profile.json'); cost = adaptive_prior(prof).cost_prior
for ctx in (512, 4096):
  for early in (0.3, 0.95):
    wl = Workload(tuple(SimRequest(ctx, 40, ((0, (early if i % 4 or not MIXED else 0.95,) * 5), (6, (0.95,) * 5)))
                          for i in range(8)), 4, prefill_tokens=1)
    st = [np.mean([simulate(wl, PolicyConfig.constant(k).build(), cost, seed=s, noise=0.05).goodput for s in range(20)]) for k in range(6)]
    cfg = adaptive_prior(prof, AdaptiveConfig(**kw), max_k=5)
    pc = PolicyConfig(schedule=Schedule.constant(4 if ctx > 1000 else 3), kind=PolicyKind.ADAPTIVE, adaptive=cfg, per_request_k=True)
    g = np.mean([simulate(wl, pc.build(), cost, seed=s, noise=0.05).goodput for s in range(20)])
    print(kw, ctx, early, f"adaptive / best static K{int(np.argmax(st))} {g/max(st):.3f}")
