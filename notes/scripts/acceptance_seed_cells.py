"""Acceptance of several text seeds through plan_eval's own cell path (pooled conditional rates,
static K = 5, every request in flight, 2 threads: counts only): is the profile's text easier
than the cells'? A diagnostic script (thirty-third stop, issue 15), not the package.

  .venv/bin/python notes/scripts/acceptance_seed_cells.py CTX PROMPTS TOKENS SEED[,SEED...]

The profile's seed of a context is 1_000_000 + ctx (`engine_profile.acceptance_seed`);
plan_eval's cells use 1000 + 97 * rep + ctx.
"""
import sys
import time

sys.path.insert(0, "benchmarks")
import numpy as np
from plan_eval import conditional_rates, measure_cell

from specsched.corpus import RequestShape, build_prompts
from specsched.engine.llm import LLM

ctx, n, tokens = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
llm = LLM("smollm2-135m", max_num_seqs=n, max_model_len=ctx + 128, num_threads=2)
pieces = llm.corpus_token_ids()
for seed in [int(x) for x in sys.argv[4].split(",")]:
    prompts = build_prompts([RequestShape(ctx, 1)] * n, pieces, seed=seed)
    t = time.perf_counter()
    _tps, d, a = measure_cell(llm, prompts, 5, tokens, 256, n)
    r = conditional_rates(d, a)
    print(f"seed {seed:>8}: a={r} prefix4 {np.prod(r[:4]):.3f} verifies {d[0]} {time.perf_counter()-t:.0f}s", flush=True)
