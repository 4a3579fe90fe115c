"""Acceptance at draft position 0, per request: the demo profile's 16 acceptance prompts vs the
one-wave demo's 4 requests at ctx 4096, streaming self-draft, static K=3, greedy, 40 and 64
tokens (a diagnostic script; 2026-12-01):

  .venv/bin/python notes/scripts/acceptance_by_text.py EXPERIMENT.yaml

EXPERIMENT.yaml: the wave demo's experiment.yaml (benchmarks/results/demo/2026-12-01-wave-B4/)."""
import sys
import zlib

import numpy as np

from specsched.bench.load import load_experiment
from specsched.bench.workload import request_shapes
from specsched.corpus import build_prompts
from specsched.engine import LLM
from specsched.engine.driver import drive
from specsched.engine.sampling.params import SamplingParams
from specsched.engine.spec.config import SpeculativeConfig
from specsched.policy import PolicyConfig
from specsched.tune.acceptance_prompts import acceptance_prompts
from specsched.tune.engine_profile import TEXT_SEED

ctx = 4096
llm = LLM("smollm2-135m", dtype="float32", max_num_seqs=16, max_model_len=ctx + 200, num_threads=2)
pieces = llm.corpus_token_ids()
prof = acceptance_prompts(pieces, None, 16, ctx, TEXT_SEED, 512)
exp = load_experiment(sys.argv[1])
scen = exp.scenario("long-ctx4096-B4")
wave = build_prompts(request_shapes(scen, exp.seed), pieces, zlib.crc32(scen.name.encode()))
spec = SpeculativeConfig.from_flags("streaming", PolicyConfig.constant(3), window=256, num_sink_tokens=4, prompt_lookup_min=1, prompt_lookup_max=4)
for name, prompts in (("profile", prof), ("wave", wave)):
    for n in (40, 64):
        llm.engine.set_speculative(spec)
        res = drive(llm.engine, prompts, SamplingParams(max_tokens=n, ignore_eos=True), concurrency=len(prompts))
        rates = []
        for s in res.seqs:
            d, a = s.stats.spec.drafted_per_position, s.stats.spec.accepted_per_position
            rates.append(a[0] / max(d[0], 1))
        print(name, n, "pos0 per request:", np.round(rates, 2), "mean", round(float(np.mean(rates)), 3), flush=True)
