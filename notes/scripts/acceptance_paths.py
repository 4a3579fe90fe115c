"""Does a request's acceptance depend on how it is run (forty-ninth stop)? plan_eval's cells
accept less than the profile's acceptance texts in every cell of three runs (thirty-third,
fortieth, forty-ninth stops). The same texts, decoded at K two ways: (a) as the profile's
acceptance point does (cold prefix cache, every core, concurrency up to 16), then (b) as a
plan_eval cell does (prefix warmed first, one thread, concurrency B). Per request: accepted /
drafted, and whether the outputs match.
  PYTHONPATH=src .venv/bin/python notes/scripts/acceptance_paths.py CTX N K TOKENS B [SEED]
"""
import dataclasses
import os
import sys

from specsched.corpus import RequestShape, build_prompts
from specsched.engine.driver import drive, warm_prefix
from specsched.engine.engine import cpu_threads
from specsched.engine.sampling.params import SamplingParams
from specsched.planner import ProfileGrid
from specsched.policy import PolicyConfig
from specsched.tune.engine_profile import EngineProfileConfig, build_llm

ctx, n, k, tokens, b = (int(a) for a in sys.argv[1:6])
seed = int(sys.argv[6]) if len(sys.argv) > 6 else 1000 + ctx
cfg = EngineProfileConfig()
llm = build_llm(cfg, ProfileGrid((b,), (ctx,), (0, k)), slots=max(n, 16))
prompts = build_prompts([RequestShape(ctx, 1)] * n, llm.corpus_token_ids(), seed=seed)
spec = dataclasses.replace(cfg.speculative, policy=PolicyConfig.constant(k))
params = SamplingParams(max_tokens=tokens, ignore_eos=True)
llm.engine.set_speculative(spec)
with cpu_threads(os.cpu_count() or 1):
    a = drive(llm.engine, prompts, params, concurrency=min(n, 16))
warm_prefix(llm.engine, prompts)
llm.engine.set_speculative(spec)
c = drive(llm.engine, prompts, params, concurrency=b)
for name, res in (("profile path", a), ("cell path", c)):
    acc = [s.stats.spec.accepted_per_position for s in res.seqs]
    dr = [s.stats.spec.drafted_per_position for s in res.seqs]
    ta, td = sum(map(sum, acc)), sum(map(sum, dr))
    print(f"{name}: accepted/drafted {ta}/{td} = {ta / td:.3f}; per request "
          + " ".join(f"{sum(x)}/{sum(y)}" for x, y in zip(acc, dr)))
print("outputs identical:", [s1.output_token_ids == s2.output_token_ids
                             for s1, s2 in zip(a.seqs, c.seqs)])
