"""
Diagnostic (2026-12-01 21:56 UTC): plan_eval's B=4 measurement of ctx 400 / 900 / 1900 with
acceptance and the draft / verify split. Run: .venv/bin/python notes/scripts/b4_probe.py
"""
from specsched.corpus import shared_prefix_prompts
from specsched.engine import LLM, SamplingParams, SpeculativeConfig
from specsched.engine.driver import drive, warm_prefix
from specsched.policy import PolicyConfig
from specsched.tune.engine_profile import TEXT_SEED

llm = LLM("smollm2-135m", dtype="float32", max_num_seqs=4, max_model_len=4200, num_threads=1)
pieces = llm.corpus_token_ids()
for c in (400, 900, 1900):
    prompts = shared_prefix_prompts(pieces, 4, c, 16, TEXT_SEED)
    warm_prefix(llm.engine, prompts)
    for rep in range(2):
        for k in (0, 1, 2):
            spec = None if k == 0 else SpeculativeConfig(window=256, policy=PolicyConfig.constant(k))
            llm.engine.set_speculative(spec)
            res = drive(llm.engine, prompts, SamplingParams(max_tokens=32, ignore_eos=True))
            first = min(ch[0] for ch in res.chunk_times)
            decode = sum(len(s.output_token_ids) - 1 for s in res.seqs)
            st = res.stats
            acc = st.spec
            print(f"ctx {c} rep {rep} K{k}: {decode / (res.end_s - first):6.1f} tok/s  steps {st.num_steps}"
                  f"  draft {st.draft_s:.2f}s verify {st.verify_s:.2f}s  drafted {list(acc.drafted_per_position)}"
                  f" accepted {list(acc.accepted_per_position)}", flush=True)
