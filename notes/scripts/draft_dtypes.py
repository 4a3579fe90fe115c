"""
Diagnostic (issue 16): acceptance and draft cost of the streaming self-draft by weight precision
(fp32 / bf16 / int8), greedy, static K=4, 8 prompts x 48 tokens per context, one request at a
time (B=1) and 4 at a time (B=4), 1 thread. Output equality with no-spec is checked too.
Run: .venv/bin/python notes/scripts/draft_dtypes.py [ctx ...]
"""
import sys
import time

import numpy as np

from specsched.engine import LLM
from specsched.engine.driver import drive
from specsched.engine.sampling.params import SamplingParams
from specsched.engine.spec.config import NO_SPECULATION, SpeculativeConfig
from specsched.policy import PolicyConfig

ctxs = [int(a) for a in sys.argv[1:]] or [512, 2048]
llm = LLM("smollm2-135m", dtype="float32", max_num_seqs=4, max_model_len=max(ctxs) + 128,
          num_threads=1)
pieces = llm.corpus_token_ids()
rng = np.random.default_rng(0)
params = [SamplingParams(max_tokens=48, ignore_eos=True)] * 8
for ctx in ctxs:
    offs = rng.integers(0, len(pieces) - ctx - 1, 8)
    prompts = [list(pieces[o:o + ctx]) for o in offs]
    llm.engine.set_speculative(NO_SPECULATION)
    ref = [s.output_token_ids for s in drive(llm.engine, prompts, params, concurrency=1).seqs]
    for conc in (1, 4):
        for dtype in ("float32", "bfloat16", "int8"):
            spec = SpeculativeConfig.from_flags("streaming", PolicyConfig.constant(4),
                                                draft_dtype=dtype)
            llm.engine.set_speculative(spec)
            d = llm.engine.speculator.drafter
            t = time.perf_counter()
            res = drive(llm.engine, prompts, params, concurrency=conc)
            wall = time.perf_counter() - t
            same = [s.output_token_ids for s in res.seqs] == ref
            dr = np.sum([s.stats.spec.drafted_per_position[:4] for s in res.seqs], 0)
            ac = np.sum([s.stats.spec.accepted_per_position[:4] for s in res.seqs], 0)
            st = res.stats
            print(f"ctx {ctx} B={conc} {llm.engine.speculator.draft_dtype:9s} acc/pos "
                  f"{np.round(ac / np.maximum(dr, 1), 2)} draft ms/fwd "
                  f"{1000 * st.draft_s / d.num_forward_calls:.1f} verify ms/step "
                  f"{1000 * st.verify_s / max(st.num_steps, 1):.1f} wall {wall:.1f}s "
                  f"same-as-nospec {same}", flush=True)
