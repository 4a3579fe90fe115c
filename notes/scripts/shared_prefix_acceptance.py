"""Does a request's acceptance depend on sharing a cached document with its batch mates
(fiftieth stop)? The demo profile's acceptance prompts at CTX (tails of 256 x (1 ± 0.5) tokens
of DOCS documents, seed SEED), decoded at static K three ways: (a) concurrency 16 with the
prefix cache on (the profile's way), (b) one at a time with the prefix cache on, (c) one at a
time with the prefix cache off. Greedy: outputs must match; accepted / drafted per request.
  .venv/bin/python notes/scripts/shared_prefix_acceptance.py CTX N OUT K SEED DOCS
"""
import dataclasses
import sys

from specsched.engine.driver import drive
from specsched.engine.engine import cpu_threads
from specsched.engine.llm import LLM
from specsched.engine.sampling.params import SamplingParams
from specsched.engine.spec.config import SpeculativeConfig
from specsched.policy import PolicyConfig
from specsched.tune.acceptance_prompts import acceptance_prompts

ctx, n, out, k, seed, docs = (int(a) for a in sys.argv[1:7])
spec = dataclasses.replace(SpeculativeConfig(window=256), policy=PolicyConfig.constant(k))
params = SamplingParams(max_tokens=out, ignore_eos=True)
runs = {}
for name, conc, cache in (("batched, cache", 16, True), ("alone, cache", 1, True),
                          ("alone, no cache", 1, False)):
    llm = LLM("smollm2-135m", max_num_seqs=16, max_model_len=ctx + 200 + out + k + 8,
              num_threads=2, enable_prefix_caching=cache)
    prompts = acceptance_prompts(llm.corpus_token_ids(), None, n, ctx, seed, 256, docs, 0.5)
    llm.engine.set_speculative(spec)
    with cpu_threads(2):
        res = drive(llm.engine, prompts, params, concurrency=conc)
    runs[name] = [(sum(s.stats.spec.accepted_per_position), s.stats.spec.drafted_per_position[0],
                   tuple(s.output_token_ids)) for s in res.seqs]
    acc = sum(a for a, _, _ in runs[name])
    ver = sum(d for _, d, _ in runs[name])
    print(f"{name}: tokens per verify {1 + acc / ver:.3f}; per request "
          + " ".join(f"{a}/{d}" for a, d, _ in runs[name]), flush=True)
base = runs["batched, cache"]
for name, r in runs.items():
    print(name, "outputs identical to batched:", sum(x[2] == y[2] for x, y in zip(base, r)),
          "of", len(r), "; counts identical:", sum(x[:2] == y[:2] for x, y in zip(base, r)))
