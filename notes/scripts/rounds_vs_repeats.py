"""Diagnostic (2026-12-06, fortieth stop): does a profile unit measured in more, shorter rounds
(rounds x repeats = 5 x 3) give steadier K / K = 0 ratios than the default 3 x 5 (the same 15
timed steps per K)? `round_correlation.py` found a unit's noise in its rounds (seconds-long slow
stretches that hit one K's consecutive steps), not in single steps. Alternates the two configs
REPS times on one engine at B = 1 and each context; per config the SD over reps of log(T(K) /
T(0)) with the profile's own estimator (`EngineProfiler._attempt`: medians pooled over rounds),
and the wall time a unit took.

  .venv/bin/python notes/scripts/rounds_vs_repeats.py REPS [CONTEXTS, e.g. 512,4096]
"""
import math
import statistics
import sys
import time

from demo_profiler import demo_llm, demo_profiler

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 6
ctxs = [int(c) for c in sys.argv[2].split(",")] if len(sys.argv) > 2 else [512, 4096]
ks = [0, 1, 2, 3, 4, 5]
CONFIGS = {"3x5": (3, 5), "5x3": (5, 3)}
llm = demo_llm()
profs = {name: demo_profiler(llm, rounds=r, repeats=n) for name, (r, n) in CONFIGS.items()}
x = {(name, c, k): [] for name in CONFIGS for c in ctxs for k in ks[1:]}
secs = {name: [] for name in CONFIGS}
for rep in range(reps):
    for c in ctxs:
        order = list(CONFIGS) if rep % 2 == 0 else list(reversed(CONFIGS))
        for name in order:
            t0 = time.perf_counter()
            points = profs[name]._attempt(1, c, ks)
            secs[name].append(time.perf_counter() - t0)
            t = {p.k: p.t_step_ms.median for p in points}
            for k in ks[1:]:
                x[(name, c, k)].append(math.log(t[k] / t[0]))
            print(f"rep {rep} ctx {c} {name}: K0 {t[0]:.1f} ms, " + " ".join(
                f"K{k} {t[k] / t[0]:.2f}" for k in ks[1:]), flush=True)
print("SD over reps of log(T(K) / T(0)):")
for c in ctxs:
    for name in CONFIGS:
        print(f"ctx {c} {name}: " + " ".join(
            f"K{k} {statistics.stdev(x[(name, c, k)]):.3f}" for k in ks[1:]) +
            f"  mean {statistics.fmean(statistics.stdev(x[(name, c, k)]) for k in ks[1:]):.3f}")
for name in CONFIGS:
    print(f"{name}: {statistics.fmean(secs[name]):.1f} s a unit")
