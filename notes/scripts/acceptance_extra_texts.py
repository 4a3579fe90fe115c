"""Does a larger profile text sample move plan_eval's predictions (fifty-third stop, issue 15)?
Measures N more acceptance texts per context of a plan_eval run's profile (other documents:
seed 3_000_000 + ctx, the profile's are 1_000_000 + ctx; same tokens and K), merges them with
the profile's requests (rates recomputed from the merged whole-output counts, horizons
concatenated, `by_output` segments pooled by verifies, persistence averaged by requests), and
writes a copy of the run folder for `benchmarks/plan_eval_predict.py`. Counts only (greedy), so
other jobs on the machine change its time, not its numbers. A diagnostic, not the package.

  PYTHONPATH=src .venv/bin/python notes/scripts/acceptance_extra_texts.py RUN_DIR OUT_DIR N TOKENS
"""
import dataclasses
import sys
import time
from pathlib import Path

from specsched.engine import SpeculativeConfig
from specsched.planner import ProfileGrid, load_profile
from specsched.planner.acceptance_ci import summarize_requests
from specsched.planner.profile import AcceptancePoint, HorizonCounts, OutputSegment
from specsched.tune import engine_profile as ep

from reprofile_out import write_run_copy


def merge(p: AcceptancePoint, q: AcceptancePoint) -> AcceptancePoint:
    k = len(p.a)
    last_p, last_q = p.horizons[-1], q.horizons[-1]
    merged = summarize_requests(p.ctx, [*last_p.drafted, *last_q.drafted],
                                [*last_p.accepted, *last_q.accepted], k)
    horizons = tuple(HorizonCounts(hp.tokens, (*hp.drafted, *hq.drafted),
                                   (*hp.accepted, *hq.accepted))
                     for hp, hq in zip(p.horizons, q.horizons, strict=True)
                     if hp.tokens == hq.tokens)
    segs = []
    for sp, sq in zip(p.by_output, q.by_output, strict=False):
        if sp.start != sq.start:
            break
        pre_p, pre_q, rates, run_p, run_q = [], [], [], 1.0, 1.0
        for ap, aq in zip(sp.a, sq.a, strict=True):
            run_p, run_q = run_p * ap, run_q * aq
            pre_p.append(run_p)
            pre_q.append(run_q)
        pooled = [(sp.verifies * x + sq.verifies * y) / (sp.verifies + sq.verifies)
                  for x, y in zip(pre_p, pre_q, strict=True)]
        prev = 1.0
        for x in pooled:
            rates.append(x / prev if prev > 0 else 0.0)
            prev = x
        segs.append(OutputSegment(sp.start, sp.verifies + sq.verifies, tuple(rates)))
    pers = None
    if p.persistence is not None and q.persistence is not None:
        pers = (p.persistence * p.num_requests + q.persistence * q.num_requests) / (
            p.num_requests + q.num_requests)
    return dataclasses.replace(merged, by_output=tuple(segs), persistence=pers,
                               horizons=horizons)


run, out = Path(sys.argv[1]), Path(sys.argv[2])
n, tokens = int(sys.argv[3]), int(sys.argv[4])
profile = load_profile(run / "profile.json")
g = profile.grid
ep.acceptance_seed = lambda ctx: 3_000_000 + ctx  # other documents than the profile's
cfg = ep.EngineProfileConfig(model="smollm2-135m", speculative=SpeculativeConfig(window=256),
                             threads=1, acceptance_tokens=tokens, acceptance_prompts=n)
grid = ProfileGrid(g.batch_sizes, g.contexts, g.ks)
prof = ep.EngineProfiler(cfg, grid, ep.build_llm(cfg, grid, slots=16))
points = []
for old in profile.acceptance:
    t = time.perf_counter()
    new = prof.acceptance(old.ctx, g.ks[-1])
    both = merge(old, new)
    print(f"ctx {old.ctx}: old a {[round(x, 3) for x in old.a]} new a "
          f"{[round(x, 3) for x in new.a]} merged requests {both.num_requests} "
          f"({time.perf_counter() - t:.0f} s)", flush=True)
    points.append(both)
write_run_copy(run, out, points)
