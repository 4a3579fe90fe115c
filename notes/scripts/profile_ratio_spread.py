"""
Diagnostic (2026-12-03, fourteenth stop): how much the profile's step-cost ratio T(K)/T(0)
moves between repeated profiles of one point, estimated two ways from the same raw steps:
(A) the profile's way, medians over all rounds per K, then divided; (B) paired, the median over
rounds of each round's median(K) / median(K=0) (the Ks of a round run back to back, so a slow
minute that spans rounds cancels). B=1, ctx from argv, K 0..5, 3 rounds x 5 steps (2 dropped).
Run: .venv/bin/python notes/scripts/profile_ratio_spread.py CTX REPEATS
"""
import statistics
import sys

from demo_profiler import demo_llm, demo_profiler

ctx = int(sys.argv[1]) if len(sys.argv) > 1 else 512
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 6
ks = [0, 1, 2, 3, 4, 5]
llm = demo_llm()
prof = demo_profiler(llm)
prompts = prof._prompts(1, ctx)
a_all: dict[int, list[float]] = {k: [] for k in ks}
b_all: dict[int, list[float]] = {k: [] for k in ks}
for rep in range(reps):
    rounds: list[dict[int, list[float]]] = []
    for r in range(3):
        shift = r % len(ks)
        cur: dict[int, list[float]] = {}
        for k in [*ks[shift:], *ks[:shift]]:
            cur[k] = [1000 * s.wall_s for s in prof._timed_steps(prompts, 1, ctx, k)]
        rounds.append(cur)
    pooled = {k: statistics.median([x for rd in rounds for x in rd[k]]) for k in ks}
    paired = {k: statistics.median([statistics.median(rd[k]) / statistics.median(rd[0])
                                    for rd in rounds]) for k in ks}
    print(f"rep {rep}: K0 {pooled[0]:5.1f} ms  A " +
          " ".join(f"{pooled[k] / pooled[0]:4.2f}" for k in ks[1:]) + "   B " +
          " ".join(f"{paired[k]:4.2f}" for k in ks[1:]), flush=True)
    for k in ks[1:]:
        a_all[k].append(pooled[k] / pooled[0])
        b_all[k].append(paired[k])
for name, d in (("A pooled", a_all), ("B paired", b_all)):
    print(name + " cv% " + " ".join(
        f"K{k} {100 * statistics.stdev(d[k]) / statistics.fmean(d[k]):4.1f}" for k in ks[1:]))
