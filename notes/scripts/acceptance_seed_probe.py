"""Does the profile's acceptance text (TEXT_SEED windows, the same seed at every context) accept
more than other windows of the same corpus? Measures acceptance at one context for several seeds
of `acceptance_prompts` with the profile's settings (a diagnostic script, not part of the
package; thirty-second stop, issue 15's over-prediction lead).

  .venv/bin/python notes/scripts/acceptance_seed_probe.py CTX PROMPTS TOKENS SEED[,SEED...]
"""
import sys
import time

from specsched.engine import SpeculativeConfig
from specsched.planner import ProfileGrid
from specsched.tune import engine_profile as ep

ctx, n, tokens = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
seeds = [int(s) for s in sys.argv[4].split(",")]
cfg = ep.EngineProfileConfig(model="smollm2-135m", speculative=SpeculativeConfig(window=256),
                             threads=1, acceptance_tokens=tokens, acceptance_prompts=n)
grid = ProfileGrid((1,), (ctx,), (0, 5))
prof = ep.EngineProfiler(cfg, grid, ep.build_llm(cfg, grid, slots=n))
for seed in seeds:
    ep.acceptance_seed = lambda _ctx, s=seed: s  # read by EngineProfiler._acceptance_prompts
    t = time.perf_counter()
    point = prof.acceptance(ctx, 5)
    print(f"ctx {ctx} seed {seed}: a = {[round(x, 3) for x in point.a]}  "
          f"(n {point.n}, {time.perf_counter() - t:.0f} s)", flush=True)
