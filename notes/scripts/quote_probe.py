"""
Diagnostic (issue 14, 2026-12-03 18:50 UTC): per-request acceptance of the first 4 requests of a
`phases` scenario over a shared document (quote / free alternating), static K=3, int8 streaming
self-draft W=256, and how many output tokens the target copies from the quoted passage's
continuation. Run: .venv/bin/python notes/scripts/quote_probe.py examples/experiments/adaptive_phases_quote.yaml
"""
import sys
import numpy as np
from specsched.bench.load import load_experiment
from specsched.bench.workload import request_shapes
from specsched.corpus import build_prompts
from specsched.engine import LLM
from specsched.engine.driver import drive
from specsched.engine.sampling.params import SamplingParams
from specsched.engine.spec.config import SpeculativeConfig
from specsched.policy import PolicyConfig

exp = load_experiment(sys.argv[1])
scen = exp.scenarios[0]
shapes = request_shapes(scen, exp.seed)[:4]
llm = LLM("smollm2-135m", dtype="float32", max_num_seqs=8, max_model_len=4608, num_threads=1)
prompts = build_prompts(shapes, llm.corpus_token_ids(), 5)
spec = SpeculativeConfig.from_flags("streaming", PolicyConfig.constant(3), draft_dtype="int8", window=256, num_sink_tokens=4)
llm.engine.set_speculative(spec)
res = drive(llm.engine, prompts, [SamplingParams(max_tokens=48, ignore_eos=True)] * 4, concurrency=1)
P = scen.prefix_len
for sh, p, s in zip(shapes, prompts, res.seqs):
    out = list(s.output_token_ids); doc = p[:P]; tail = p[P:]
    # where the quote sits in the document, and how many output tokens follow the document
    copied = 0
    if sh.quote:
        at = next(i for i in range(P) if doc[i:i+len(tail)] == tail)
        cont = doc[at+len(tail):at+len(tail)+48]
        copied = next((j for j,(a,b) in enumerate(zip(out,cont)) if a!=b), len(cont))
        print("quote at", at, "of", P, "tail", len(tail))
    d, a = s.stats.spec.drafted_per_position, s.stats.spec.accepted_per_position
    print("quote" if sh.quote else "free ", "acc", [round(a[i]/max(d[i],1),2) for i in range(3)], "target copies first", copied, "tokens", flush=True)
