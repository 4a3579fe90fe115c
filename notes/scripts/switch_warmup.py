"""Does a step right after a K switch cost more than one deep into a run of one K (forty-ninth
stop)? The demo's profile times steps 3-7 of each 7-step round right after switching K; the run
decodes ~40 steps at one K. For (B, ctx): `rounds` times, a round of K_from then a long round of
K_to, printing K_to's step time by index after the switch (median over rounds).
  PYTHONPATH=src .venv/bin/python notes/scripts/switch_warmup.py B CTX K_FROM K_TO [STEPS] [ROUNDS]
"""
import dataclasses
import statistics as st
import sys

from specsched.planner import ProfileGrid
from specsched.tune.engine_profile import EngineProfileConfig, EngineProfiler

b, ctx, k_from, k_to = (int(a) for a in sys.argv[1:5])
steps = int(sys.argv[5]) if len(sys.argv) > 5 else 30
rounds = int(sys.argv[6]) if len(sys.argv) > 6 else 4
grid = ProfileGrid((b,), (ctx,), tuple(sorted({0, k_from, k_to, 1})))
cfg = EngineProfileConfig(repeats=steps, warmup=0, rounds=1)
prof = EngineProfiler(cfg, grid)
short = EngineProfiler(dataclasses.replace(cfg, repeats=7), grid, prof.llm)
prompts = prof._prompts(b, ctx)
by_index: list[list[float]] = [[] for _ in range(steps)]
for r in range(rounds):
    short._timed_steps(prompts, b, ctx, k_from)
    for i, s in enumerate(prof._timed_steps(prompts, b, ctx, k_to)):
        by_index[i].append(1000.0 * s.wall_s)
med = [st.median(v) for v in by_index]
print(f"B{b} x {ctx}: K{k_to} after K{k_from}, median of {rounds} rounds, ms by step index")
print(" ".join(f"{m:.1f}" for m in med))
tail = st.median(x for v in by_index[steps // 2:] for x in v)
prof_like = st.median(x for v in by_index[2:7] for x in v)
print(f"steps 3-7 (the profile's) {prof_like:.1f}  steps {steps // 2 + 1}-{steps} {tail:.1f}  "
      f"ratio {prof_like / tail:.3f}")
