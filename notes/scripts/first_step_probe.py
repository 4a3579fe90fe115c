"""Per-step wall time of B=1 requests by step index after prefill, no-spec vs static K=4
(8 plan_eval-style documents x 48 tokens): is a first drafting step dearer than later ones?

    .venv/bin/python notes/scripts/first_step_probe.py 400
"""
import statistics
import sys

sys.path.insert(0, "benchmarks")
from plan_eval import cell_prompts

from specsched.engine import SamplingParams, SpeculativeConfig
from specsched.engine.driver import drive, warm_prefix
from specsched.planner import ProfileGrid
from specsched.policy import PolicyConfig
from specsched.tune.engine_profile import EngineProfileConfig, EngineProfiler, build_llm

ctx = int(sys.argv[1])
grid = ProfileGrid((1,), (ctx,), (0, 4))
cfg = EngineProfileConfig(model="smollm2-135m", speculative=SpeculativeConfig(window=256), threads=1)
llm = EngineProfiler(cfg, grid, build_llm(cfg, grid, slots=8)).llm
prompts = cell_prompts(llm.corpus_token_ids(), 8, ctx, 0, "per-request")
warm_prefix(llm.engine, prompts)
for k in (0, 4):
    llm.engine.set_speculative(None if k == 0 else SpeculativeConfig(window=256, policy=PolicyConfig.constant(k)))
    rows = []
    def on_step(res):
        st = llm.engine.last_step
        rows.append((st.num_prefill, st.num_decode, st.wall_s * 1e3, st.draft_s * 1e3))
    for p in prompts:
        rows.append(None)
        drive(llm.engine, [p], SamplingParams(max_tokens=48, ignore_eos=True), on_step=on_step)
    # per request: step index after prefill
    per_idx = {}
    i = -1
    for r in rows:
        if r is None:
            i = -1; continue
        i += 1
        per_idx.setdefault(i, []).append(r)
    for j in range(0, 4):
        print(f"K={k} step {j}: wall ms median {statistics.median(x[2] for x in per_idx[j]):.1f} draft {statistics.median(x[3] for x in per_idx[j]):.1f} (prefill rows {per_idx[j][0][0]})")
    later = [x[2] for j in per_idx if j >= 4 for x in per_idx[j]]
    print(f"K={k} steps >= 4: wall ms median {statistics.median(later):.1f}")
