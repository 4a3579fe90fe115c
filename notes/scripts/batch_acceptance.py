"""Does a request's acceptance depend on its batch mates (forty-ninth stop)? The same prompts
(plan_eval's cell texts) decoded at K with concurrency 1 and with concurrency B; per request:
accepted / drafted per position, and whether the outputs match (greedy: they must).
  PYTHONPATH=src .venv/bin/python notes/scripts/batch_acceptance.py CTX B K TOKENS [SEED]
"""
import dataclasses
import sys

from specsched.corpus import RequestShape, build_prompts
from specsched.engine.driver import drive, warm_prefix
from specsched.engine.sampling.params import SamplingParams
from specsched.planner import ProfileGrid
from specsched.policy import PolicyConfig
from specsched.tune.engine_profile import EngineProfileConfig, build_llm

ctx, b, k, tokens = (int(a) for a in sys.argv[1:5])
seed = int(sys.argv[5]) if len(sys.argv) > 5 else 1000 + ctx
cfg = EngineProfileConfig()
llm = build_llm(cfg, ProfileGrid((b,), (ctx,), (0, k)), slots=b)
prompts = build_prompts([RequestShape(ctx, 1)] * b, llm.corpus_token_ids(), seed=seed)
warm_prefix(llm.engine, prompts)
spec = dataclasses.replace(cfg.speculative, policy=PolicyConfig.constant(k))
params = SamplingParams(max_tokens=tokens, ignore_eos=True)
runs = {}
for conc in (1, b):
    llm.engine.set_speculative(spec)
    res = drive(llm.engine, prompts, params, concurrency=conc)
    runs[conc] = res
    acc = [s.stats.spec.accepted_per_position for s in res.seqs]
    dr = [s.stats.spec.drafted_per_position for s in res.seqs]
    tot_a, tot_d = sum(sum(a) for a in acc), sum(sum(d) for d in dr)
    print(f"concurrency {conc}: accepted/drafted {tot_a}/{tot_d} = {tot_a / tot_d:.3f}; "
          f"per request " + " ".join(f"{sum(a)}/{sum(d)}" for a, d in zip(acc, dr)))
same = [s1.output_token_ids == s2.output_token_ids
        for s1, s2 in zip(runs[1].seqs, runs[b].seqs)]
print("outputs identical:", same)
