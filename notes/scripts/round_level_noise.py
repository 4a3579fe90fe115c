"""Diagnostic (2026-12-06, fortieth stop): where a profile unit's noise lives - in each step, or in
each round (a fresh `drive` of the same prompts: new requests, new KV blocks, a fresh draft
state)? B = 1, K alternating 0 / 4 (and 2) round by round like the profile, `ROUNDS` rounds of
`REPEATS` timed steps (2 dropped); per K: the SD of log step time within a round and the SD of
the round means (log) beyond what the within-round noise explains.

  .venv/bin/python notes/scripts/round_level_noise.py CTX ROUNDS REPEATS
"""
import math
import statistics
import sys

from demo_profiler import demo_llm, demo_profiler

ctx, rounds, repeats = (int(a) for a in (sys.argv[1:4] if len(sys.argv) > 3 else (512, 12, 5)))
ks = [0, 2, 4]
llm = demo_llm()
prof = demo_profiler(llm, repeats=repeats, rounds=1)
prompts = prof._prompts(1, ctx)
logs: dict[int, list[list[float]]] = {k: [] for k in ks}
for r in range(rounds):
    for k in [*ks[r % 3:], *ks[:r % 3]]:
        logs[k].append([math.log(1000 * s.wall_s) for s in prof._timed_steps(prompts, 1, ctx, k)])
    print(f"round {r}: " + " ".join(
        f"K{k} " + ",".join(f"{math.exp(v):.0f}" for v in logs[k][-1]) for k in ks), flush=True)
for k in ks:
    within = math.sqrt(statistics.fmean(statistics.variance(rd) for rd in logs[k]))
    means = [statistics.fmean(rd) for rd in logs[k]]
    between = math.sqrt(max(0.0, statistics.variance(means) - within**2 / repeats))
    print(f"K{k}: within-round sd {within:.3f}, between-round sd {between:.3f} "
          f"(round means {math.exp(min(means)):.0f}-{math.exp(max(means)):.0f} ms)")
