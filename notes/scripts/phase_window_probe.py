"""
Diagnostic (issue 14): does the streaming self-draft's acceptance switch between a prompt that
quotes a passage from further back than its window (the target copies it; the draft, seeing only
the last W tokens + sinks, cannot) and running text? ctx ~N tokens, static K=3, int8 draft.
Run: .venv/bin/python notes/scripts/phase_window_probe.py [ctx] [unit] [window] [tokens]
"""
import sys
import time

import numpy as np

from specsched.corpus import RequestShape, build_prompts
from specsched.engine import LLM
from specsched.engine.driver import drive
from specsched.engine.sampling.params import SamplingParams
from specsched.engine.spec.config import SpeculativeConfig
from specsched.policy import PolicyConfig

ctx, unit, window, tokens = (int(a) for a in (sys.argv[1:] + ["4096", "1024", "256", "48"][len(sys.argv) - 1:]))
shapes = [RequestShape(ctx, tokens, repeat_unit=unit if i % 2 == 0 else 0) for i in range(6)]
llm = LLM("smollm2-135m", dtype="float32", max_num_seqs=4, max_model_len=ctx + 256, num_threads=1)
prompts = build_prompts(shapes, llm.corpus_token_ids(), 7)
rep = [s.repeat_unit > 0 for s in shapes]
params = [SamplingParams(max_tokens=tokens, ignore_eos=True)] * len(prompts)
for k in (0, 3):
    spec = SpeculativeConfig.from_flags("streaming", PolicyConfig.constant(k), draft_dtype="int8",
                                        window=window, num_sink_tokens=4)
    llm.engine.set_speculative(spec)
    t = time.perf_counter()
    res = drive(llm.engine, prompts, params, concurrency=1)
    wall = time.perf_counter() - t
    st = res.stats
    if k == 0:
        base = [list(s.output_token_ids) for s in res.seqs]
        print(f"K=0 wall {wall:.1f}s steps {st.num_steps}", flush=True)
        continue
    same = all(list(s.output_token_ids) == b for s, b in zip(res.seqs, base))
    acc = {True: [], False: []}
    for r, s in zip(rep, res.seqs):
        d, a = s.stats.spec.drafted_per_position, s.stats.spec.accepted_per_position
        acc[r].append([a[i] / max(d[i], 1) for i in range(3)])
    print(f"K={k} W={window} unit={unit} ctx={ctx}: quote", np.round(np.mean(acc[True], 0), 2),
          "free", np.round(np.mean(acc[False], 0), 2), f"wall {wall:.1f}s steps {st.num_steps}",
          "greedy-equal", same, flush=True)
