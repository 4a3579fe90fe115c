"""The per-request spread of acceptance over a short output horizon vs over the whole
acceptance output, on the same texts (fifty-first stop, issue 15: the planner's band is a t
interval over per-request rates measured over the whole output). Decodes the profile's
plain-window texts of one context (seed 1_000_000 + ctx, as `engine_profile.acceptance_seed`)
at static K, snapshots each request's cumulative drafted / accepted counts after every step,
and prints, per horizon H, the mean / sd / se of the requests' prefix rate at depth 4 over
their first H output tokens, plus the pooled rate. Counts only (2 threads), never timed.

  PYTHONPATH=src .venv/bin/python notes/scripts/acceptance_horizon.py CTX PROMPTS TOKENS K H[,H...]
"""
import math
import sys

import numpy as np

from specsched.corpus import RequestShape, build_prompts
from specsched.engine import SamplingParams, SpeculativeConfig
from specsched.engine.driver import drive
from specsched.engine.llm import LLM
from specsched.policy import PolicyConfig

ctx, n, tokens, k = (int(x) for x in sys.argv[1:5])
horizons = [int(x) for x in sys.argv[5].split(",")] + [tokens]
llm = LLM("smollm2-135m", max_num_seqs=n, max_model_len=ctx + tokens + 64, num_threads=2)
prompts = build_prompts([RequestShape(ctx, 1)] * n, llm.corpus_token_ids(), seed=1_000_000 + ctx)
llm.engine.set_speculative(SpeculativeConfig(window=256, policy=PolicyConfig.constant(k)))
snaps: list[list[tuple[int, list[int], list[int]]]] = [[] for _ in prompts]


def snapshot(res) -> None:  # type: ignore[no-untyped-def]
    for i, seq in enumerate(res.seqs):
        s = seq.stats.spec
        snaps[i].append((len(seq.output_token_ids), list(s.drafted_per_position),
                         list(s.accepted_per_position)))


drive(llm.engine, prompts, SamplingParams(max_tokens=tokens, ignore_eos=True),
      concurrency=n, on_step=snapshot)
for h in horizons:
    per, dsum, asum = [], np.zeros(k), np.zeros(k)
    for steps in snaps:
        at = next((s for s in steps if s[0] >= h), steps[-1])  # counts after the first h tokens
        d, a = np.asarray(at[1][:k], float), np.asarray(at[2][:k], float)
        if d[0] == 0:
            continue
        dsum += d
        asum += a
        if d[3] > 0:  # accepted_k / drafted_k is the prefix rate r_k (every verify drafts K)
            per.append(float(a[3] / d[3]))
    r = np.asarray(per)
    pooled = float(asum[3] / dsum[3])
    print(f"ctx {ctx} H {h:>4}: {len(r)} requests, prefix4 mean {r.mean():.3f} sd "
          f"{r.std(ddof=1):.3f} se {r.std(ddof=1) / math.sqrt(len(r)):.3f} "
          f"(rel {r.std(ddof=1) / math.sqrt(len(r)) / r.mean():.1%}); pooled {pooled:.3f}")
