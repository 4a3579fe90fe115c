"""Diagnostic (2026-12-06, fortieth stop): is a profile unit's error shared by its rounds (a slow
stretch of the machine that spans the unit's ~20 s), so that spreading a unit's rounds over the
whole profile would average it? Per rep, a block like the profile's (3 interleaved rounds of
K 0..5 at B = 1) at each context in turn; per round the log ratio x = log(median T(K) /
median T(0)). One-way ANOVA over blocks: x_ij = mu + b_i + e_ij. The profile's estimate (one
block of 3 rounds) has variance sb^2 + se^2 / 3; 3 rounds from 3 different blocks (minutes
apart) would have (sb^2 + se^2) / 3.

  .venv/bin/python notes/scripts/round_correlation.py REPS [CONTEXTS, e.g. 512,4096]
"""
import math
import statistics
import sys
import time

from demo_profiler import demo_llm, demo_profiler

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
ctxs = [int(c) for c in sys.argv[2].split(",")] if len(sys.argv) > 2 else [512, 4096]
ks = [0, 1, 2, 3, 4, 5]
llm = demo_llm()
prof = demo_profiler(llm)
prompts = {c: prof._prompts(1, c) for c in ctxs}
x: dict[tuple[int, int], list[list[float]]] = {(c, k): [] for c in ctxs for k in ks[1:]}
t0 = time.time()
for rep in range(reps):
    for c in ctxs:
        block: dict[int, list[float]] = {k: [] for k in ks[1:]}
        for r in range(3):
            shift = r % len(ks)
            med: dict[int, float] = {}
            for k in [*ks[shift:], *ks[:shift]]:
                med[k] = statistics.median(1000 * s.wall_s
                                           for s in prof._timed_steps(prompts[c], 1, c, k))
            for k in ks[1:]:
                block[k].append(math.log(med[k] / med[0]))
        for k in ks[1:]:
            x[(c, k)].append(block[k])
        print(f"{time.time() - t0:6.0f}s rep {rep} ctx {c}: " + " ".join(
            f"K{k} " + "/".join(f"{math.exp(v):.2f}" for v in block[k]) for k in ks[1:]),
            flush=True)
print("ctx K   sd_between(sb)  sd_within(se)  sd profile-style  sd spread  ratio")
for (c, k), blocks in x.items():
    n = 3
    means = [statistics.fmean(b) for b in blocks]
    se2 = statistics.fmean(statistics.variance(b) for b in blocks)
    sb2 = max(0.0, statistics.variance(means) - se2 / n)
    contig, spread = math.sqrt(sb2 + se2 / n), math.sqrt((sb2 + se2) / n)
    print(f"{c:4} {k}   {math.sqrt(sb2):.3f}  {math.sqrt(se2):.3f}  {contig:.3f}  {spread:.3f}  "
          f"{contig / spread:.2f}")
