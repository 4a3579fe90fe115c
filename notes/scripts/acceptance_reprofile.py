"""Re-measure only the acceptance points of a plan_eval run's profile with another sampling
(distinct tails of shared documents, more texts, fewer tokens), and write a copy of the run
folder whose profile carries them, for `benchmarks/plan_eval_predict.py` to re-predict the
same measured cells. Thirty-third stop, issue 15; a diagnostic script, not the package.

  .venv/bin/python notes/scripts/acceptance_reprofile.py RUN_DIR OUT_DIR PROMPTS TAIL DOCS TOKENS
"""
import sys
import time
from pathlib import Path

from specsched.engine import SpeculativeConfig
from specsched.planner import ProfileGrid, load_profile
from specsched.tune import engine_profile as ep

from reprofile_out import write_run_copy

run, out = Path(sys.argv[1]), Path(sys.argv[2])
n, tail, docs, tokens = (int(x) for x in sys.argv[3:7])
profile = load_profile(run / "profile.json")
g = profile.grid
cfg = ep.EngineProfileConfig(model="smollm2-135m", speculative=SpeculativeConfig(window=256),
                             threads=1, acceptance_tokens=tokens, acceptance_prompts=n,
                             acceptance_tail=tail, acceptance_documents=docs)
grid = ProfileGrid(g.batch_sizes, g.contexts, g.ks)
prof = ep.EngineProfiler(cfg, grid, ep.build_llm(cfg, grid, slots=16))
points = []
for ctx in g.contexts:
    t = time.perf_counter()
    p = prof.acceptance(ctx, g.ks[-1])
    seg0 = p.by_output[0].a if p.by_output else ()
    print(f"ctx {ctx}: a {[round(x, 3) for x in p.a]} seg0 {[round(x, 3) for x in seg0]} "
          f"(requests {p.num_requests}, {time.perf_counter() - t:.0f} s)", flush=True)
    points.append(p)
write_run_copy(run, out, points)
