"""An acceptance point at one context, alternating torch threads 1, 2, 1, 2: time and counts
(thirty-third stop: the acceptance decode now runs on every core). A diagnostic script, not the
package.

  .venv/bin/python notes/scripts/acceptance_threads_probe.py CTX PROMPTS
"""
import sys
import time

import torch

from specsched.engine import SpeculativeConfig
from specsched.planner import ProfileGrid
from specsched.tune import engine_profile as ep

ctx, n = int(sys.argv[1]), int(sys.argv[2])
cfg = ep.EngineProfileConfig(model="smollm2-135m", speculative=SpeculativeConfig(window=256),
                             threads=1, acceptance_tokens=128, acceptance_prompts=n)
grid = ProfileGrid((1, 4), (ctx,), (0, 5))
prof = ep.EngineProfiler(cfg, grid, ep.build_llm(cfg, grid))
for th in (1, 2, 1, 2):
    torch.set_num_threads(th)
    prof.llm.engine.prefix_cache_reset() if hasattr(prof.llm.engine, "prefix_cache_reset") else None
    t = time.perf_counter()
    point = prof.acceptance(ctx, 5)
    print(f"threads {th}: a={[round(x,3) for x in point.a]} {time.perf_counter()-t:.1f} s", flush=True)
