"""
Diagnostic (2026-12-01 20:49 UTC): acceptance per phase (repeated snippet vs free text) of
examples/experiments/adaptive_phases.yaml's text for the streaming self-draft at windows 256 / 48 /
24 and greedy prompt lookup, static K=3, 64 tokens. Run: .venv/bin/python notes/scripts/phase_acceptance.py
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

exp = load_experiment("examples/experiments/adaptive_phases.yaml")
scen = exp.scenarios[0]
shapes = request_shapes(scen, 3)
llm = LLM("smollm2-135m", dtype="float32", max_num_seqs=16, max_model_len=1024, num_threads=1)
pieces = llm.corpus_token_ids()
prompts = build_prompts(shapes, pieces, 3)
rep = [s.repeat_unit > 0 for s in shapes]
for drafter, window in (("streaming", 256), ("streaming", 48), ("streaming", 24), ("ngram", 256)):
    spec = SpeculativeConfig.from_flags(drafter, PolicyConfig.constant(3), window=window,
                                        num_sink_tokens=4, prompt_lookup_min=1, prompt_lookup_max=4)
    llm.engine.set_speculative(spec)
    res = drive(llm.engine, prompts, [SamplingParams(max_tokens=64, ignore_eos=True)] * len(prompts),
                concurrency=4)
    acc = {True: [], False: []}
    for r, s in zip(rep, res.seqs):
        d, a = s.stats.spec.drafted_per_position, s.stats.spec.accepted_per_position
        acc[r].append([a[i] / max(d[i], 1) for i in range(3)])
    st = res.stats
    print(drafter, window, "repeat", np.round(np.mean(acc[True], 0), 2), "free",
          np.round(np.mean(acc[False], 0), 2), "draft_s", round(st.draft_s, 2), "verify_s",
          round(st.verify_s, 2), "steps", st.num_steps, flush=True)
