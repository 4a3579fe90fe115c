"""Same texts through plan_eval's cell path at several concurrencies: does the batch size move
acceptance (pooled conditional, static K = 5)? Thirty-third stop, issue 15; a diagnostic script,
not the package.

  .venv/bin/python notes/scripts/acceptance_concurrency_probe.py CTX PROMPTS TOKENS SEED C[,C...]
"""
import sys
import time

sys.path.insert(0, "benchmarks")
from plan_eval import conditional_rates, measure_cell

from specsched.corpus import RequestShape, build_prompts
from specsched.engine.llm import LLM

ctx, n, tokens, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
llm = LLM("smollm2-135m", max_num_seqs=n, max_model_len=ctx + 128, num_threads=2)
prompts = build_prompts([RequestShape(ctx, 1)] * n, llm.corpus_token_ids(), seed=seed)
for c in [int(x) for x in sys.argv[5].split(",")]:
    t = time.perf_counter()
    _tps, d, a = measure_cell(llm, prompts, 5, tokens, 256, c)
    print(f"conc {c:>2}: a={conditional_rates(d, a)} verifies {d[0]} {time.perf_counter()-t:.0f}s", flush=True)
