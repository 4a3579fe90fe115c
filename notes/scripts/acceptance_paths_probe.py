"""Same texts, two measurement paths: the profile's acceptance point (every request at once) vs
plan_eval's cell (concurrency C, static K = 5), pooled conditional acceptance. Thirty-third stop,
issue 15; a diagnostic script, not the package.

  .venv/bin/python notes/scripts/acceptance_paths_probe.py CTX PROMPTS CONCURRENCY TOKENS
"""
import sys
import time

sys.path.insert(0, "benchmarks")
from plan_eval import conditional_rates, measure_cell

from specsched.corpus import RequestShape, build_prompts
from specsched.engine import SpeculativeConfig
from specsched.planner import ProfileGrid
from specsched.tune import engine_profile as ep

ctx, n, conc, tokens = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
seed = 1000 + ctx
cfg = ep.EngineProfileConfig(model="smollm2-135m", speculative=SpeculativeConfig(window=256),
                             threads=1, acceptance_tokens=tokens, acceptance_prompts=n)
grid = ProfileGrid((1, 4), (ctx,), (0, 5))
prof = ep.EngineProfiler(cfg, grid, ep.build_llm(cfg, grid, slots=n))
pieces = prof.llm.corpus_token_ids()
prompts = build_prompts([RequestShape(ctx, 1)] * n, pieces, seed=seed)
ep.acceptance_seed = lambda c: seed  # the profiler draws the same texts
assert prof._acceptance_prompts(ctx) == prompts
t = time.perf_counter()
point = prof.acceptance(ctx, 5)
print(f"profile path : a={[round(x, 3) for x in point.a]} seg0={[round(x,3) for x in point.by_output[0].a]} {time.perf_counter()-t:.0f}s", flush=True)
for c in (conc, n):
    t = time.perf_counter()
    _tps, d, a = measure_cell(prof.llm, prompts, 5, tokens, 256, c)
    print(f"cell path conc {c}: a={[round(x, 3) for x in conditional_rates(d, a)]} {time.perf_counter()-t:.0f}s", flush=True)
