"""Why do 40-text samples differ ~2x more than the per-request se says? (fifty-second stop,
issue 15.) For several text seeds at one context, decodes every text at static K (counts only,
2 threads, never timed) and prints per seed: the pooled prefix4 (sum accepted / sum drafted at
position 4, what acceptance_seed_cells.py printed), the unweighted mean of per-request prefix4
(what the planner's band is built on), their bootstrap se over requests, and the mean tokens per
verify. Then the sd of each quantity across seeds, to compare with the within-seed se.

  PYTHONPATH=src .venv/bin/python notes/scripts/acceptance_seed_bootstrap.py CTX PROMPTS TOKENS K SEED[,SEED...] [OUT.json]
"""
import json
import sys

import numpy as np

from specsched.corpus import RequestShape, build_prompts
from specsched.engine import SamplingParams, SpeculativeConfig
from specsched.engine.driver import drive
from specsched.engine.llm import LLM
from specsched.policy import PolicyConfig

ctx, n, tokens, k = (int(x) for x in sys.argv[1:5])
seeds = [int(x) for x in sys.argv[5].split(",")]
out = sys.argv[6] if len(sys.argv) > 6 else None
llm = LLM("smollm2-135m", max_num_seqs=n, max_model_len=ctx + tokens + 64, num_threads=2)
pieces = llm.corpus_token_ids()
llm.engine.set_speculative(SpeculativeConfig(window=256, policy=PolicyConfig.constant(k)))
rng = np.random.default_rng(0)
rows: dict[int, list[tuple[list[int], list[int]]]] = {}
stats = []
for seed in seeds:
    prompts = build_prompts([RequestShape(ctx, 1)] * n, pieces, seed=seed)
    res = drive(llm.engine, prompts, SamplingParams(max_tokens=tokens, ignore_eos=True),
                concurrency=n)
    counts = [(list(s.stats.spec.drafted_per_position[:k]), list(s.stats.spec.accepted_per_position[:k]))
              for s in res.seqs]
    rows[seed] = counts
    d = np.asarray([c[0] for c in counts], float)  # [n, k]
    a = np.asarray([c[1] for c in counts], float)
    idx = rng.integers(0, len(d), size=(4000, len(d)))
    pooled_b = a[idx, 3].sum(1) / d[idx, 3].sum(1)
    per = a[:, 3] / d[:, 3]
    mean_b = per[idx].mean(1)
    tps = tokens / d[:, 0]  # tokens per verify per request (every verify drafts K)
    stats.append((a[:, 3].sum() / d[:, 3].sum(), pooled_b.std(), per.mean(), mean_b.std(),
                  float(tps.mean()), float(tps[idx].mean(1).std()), tokens * len(d) / d[:, 0].sum()))
    s = stats[-1]
    print(f"seed {seed}: pooled {s[0]:.3f} (boot se {s[1] / s[0]:.1%}) mean-of-requests {s[2]:.3f} "
          f"(se {s[3] / s[2]:.1%}) tokens/verify mean {s[4]:.2f} (se {s[5] / s[4]:.1%}) "
          f"pooled tokens/verify {s[6]:.2f}", flush=True)
st = np.asarray(stats)
for name, c, c_se in (("pooled prefix4", 0, 1), ("mean prefix4", 2, 3), ("tokens/verify", 4, 5)):
    print(f"{name}: across {len(seeds)} seeds mean {st[:, c].mean():.3f} sd {st[:, c].std(ddof=1) / st[:, c].mean():.1%}; "
          f"within-seed bootstrap se (rms) {np.sqrt((st[:, c_se] ** 2).mean()) / st[:, c].mean():.1%}")
print(f"pooled tokens/verify: across seeds sd {st[:, 6].std(ddof=1) / st[:, 6].mean():.1%}")
if out:
    with open(out, "w") as f:
        json.dump({"ctx": ctx, "tokens": tokens, "k": k, "rows": {str(s): r for s, r in rows.items()}}, f)
