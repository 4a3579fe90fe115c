"""Profile the adaptive policy's decide + observe at B16 x 512 with the grid's AVX-512 profile as
its prior, in the steady state of grid 37's B16 x 512 cell (every step K = 0; waves of 16 fresh
requests every 32 steps, all rooms equal). A diagnostic script (thirty-seventh stop).
  .venv/bin/python notes/scripts/policy_k0_profile.py [-p]   (-p: cProfile of 300 steps)"""
import cProfile, pstats, random, sys, time
sys.path.insert(0, 'benchmarks')
from policy_overhead import _outcome as _o
import dataclasses
def _outcome(b, ks, rng):  # step time as the profile says at B16 x 512: ~2x per drafted K
    o = _o(b, ks, rng)
    return dataclasses.replace(o, step_time_s=0.1216 * (1 + 0.98 * max(ks)) * (1 + 0.03 * rng.random()))
from specsched.bench.load import load_experiment
from specsched.policy import BatchState
exp = load_experiment('benchmarks/results/adaptive/lockstep-probe-ab-2026-12-06-thirty-seventh/lockstep_ab.yaml')
pc = [a for a in exp.arms if a.name == 'adaptive'][0].policy
def batch(step):
    n, ctx = 16, 512
    return BatchState(tuple(ctx + step % 32 for _ in range(n)), (ctx,) * n, (31 - step % 32,) * n,
                      tuple(range(16 * (step // 32), 16 * (step // 32) + 16)))
rng = random.Random(0)
p = pc.build()
ks_seen = 0
for s in range(200):
    b = batch(s); d = p.decide(b); ks_seen += any(d.num_spec_tokens)
    p.observe(_outcome(b, d.num_spec_tokens, rng))
print("drafting steps in warm-up:", ks_seen)
bs = [batch(200 + i) for i in range(300)]
t0 = time.perf_counter()
for b in bs:
    p.observe(_outcome(b, p.decide(b).num_spec_tokens, rng))
print(f"decide+observe {1e6 * (time.perf_counter() - t0) / len(bs):.0f} us per step")
if "-p" in sys.argv:
    pr = cProfile.Profile(); pr.enable()
    for b in bs:
        p.observe(_outcome(b, p.decide(b).num_spec_tokens, rng))
    pr.disable()
    pstats.Stats(pr).sort_stats('cumulative').print_stats(28)
