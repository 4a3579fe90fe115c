"""Is the demo's profile acceptance biased against the demo's own prompt shape (fiftieth stop)?
Per text seed, tokens per verify at static K (greedy: deterministic, so load does not matter)
over OUT tokens, for N prompts of two shapes at context CTX:
  profile: the demo profile's acceptance prompts (`acceptance_prompts`, tails of TAIL x (1 ±
           RANGE) tokens of DOCS documents; at CTX <= TAIL plain CTX-token windows),
  serving: the demo's serving requests (a shared document of CTX - 256 tokens, one per 2
           requests, and own tails of 128-384 tokens, as `bench.workload` draws them).
Paired seeds, so the mean difference over seeds is the shape effect and its spread the sampling.
  .venv/bin/python notes/scripts/acceptance_shape_seeds.py CTX N OUT K SEEDS [TAIL DOCS RANGE]
PROFILE_ONLY=1 in the environment skips the serving prompts.
(defaults 512 4 0: the demo's profile before the fiftieth stop; 256 4 0.5 after)
"""
import dataclasses
import os
import random
import statistics as st
import sys
import time

from specsched.corpus import RequestShape, build_prompts
from specsched.engine.driver import drive, warm_prefix
from specsched.engine.engine import cpu_threads
from specsched.engine.llm import LLM
from specsched.engine.sampling.params import SamplingParams
from specsched.engine.spec.config import SpeculativeConfig
from specsched.policy import PolicyConfig
from specsched.tune.acceptance_prompts import acceptance_prompts

ctx, n, out, k = (int(a) for a in sys.argv[1:5])
seeds = [int(s) for s in sys.argv[5].split(",")]
tail, docs = (int(sys.argv[6]), int(sys.argv[7])) if len(sys.argv) > 7 else (512, 4)
tail_range = float(sys.argv[8]) if len(sys.argv) > 8 else 0.0
llm = LLM("smollm2-135m", max_num_seqs=16, max_model_len=ctx + 200 + out + k + 8, num_threads=2)
pieces = llm.corpus_token_ids()
spec = dataclasses.replace(SpeculativeConfig(window=256), policy=PolicyConfig.constant(k))
params = SamplingParams(max_tokens=out, ignore_eos=True)


def serving(seed: int) -> list[list[int]]:
    prompts: list[list[int]] = []
    for rep in range(n // 2):  # a document per 2 requests, as a replicate of the demo
        srng = random.Random(f"{seed}/{rep}/suffixes")
        shapes = [RequestShape(ctx - 256 + srng.randint(128, 384), out, prefix_id=0,
                               prefix_len=ctx - 256) for _ in range(2)]
        prompts += build_prompts(shapes, pieces, seed * 1000 + rep)
    return prompts


def tokens_per_verify(prompts: list[list[int]]) -> float:
    warm_prefix(llm.engine, prompts[:16])
    llm.engine.set_speculative(spec)
    acc = dr = 0
    for i in range(0, len(prompts), 16):
        res = drive(llm.engine, prompts[i:i + 16], params, concurrency=16)
        for s in res.seqs:
            acc += sum(s.stats.spec.accepted_per_position)
            dr += s.stats.spec.drafted_per_position[0]
    return 1 + acc / dr


diffs = []
with cpu_threads(2):
    for seed in seeds:
        t = time.perf_counter()
        prof = acceptance_prompts(pieces, None, n, ctx, seed, tail, docs, tail_range)
        p = tokens_per_verify(prof)
        s = p if os.environ.get("PROFILE_ONLY") else tokens_per_verify(serving(seed))
        diffs.append(s / p - 1)
        print(f"seed {seed}: profile {p:.3f}  serving {s:.3f}  serving/profile {s / p:.3f} "
              f"({time.perf_counter() - t:.0f} s)", flush=True)
m, sd = st.mean(diffs), st.stdev(diffs) if len(diffs) > 1 else 0.0
print(f"serving/profile - 1 over {len(diffs)} seeds: mean {100 * m:+.1f} %, sd {100 * sd:.1f} %, "
      f"se {100 * sd / len(diffs) ** 0.5:.1f} %")
