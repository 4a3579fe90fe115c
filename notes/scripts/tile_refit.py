"""Re-fit a profile's step cost model with the attention tile term as the engine reports it
(int q_tile = lanes // G), exact (q_tile = lanes / G, passes = ceil(G q / lanes) - 1) and none,
and print each fit's B=1 predictions against the profile's points (seventeenth stop, AVX2 demo).

  .venv/bin/python notes/scripts/tile_refit.py
"""
import dataclasses, numpy as np
from specsched.planner.profile_io import load_profile
from specsched.planner import adaptive_prior
from specsched.policy import cost
prof = load_profile("benchmarks/results/demo/2026-12-03-seventeenth-avx2-clean-clone-c37549c/profile.json")
orig = cost.tile_passes
def exact(ks, q_tile):
    ks = np.asarray(ks, dtype=np.float64)
    return np.ceil((ks + 1.0) / q_tile - 1e-9) - 1.0 if q_tile else np.zeros_like(ks)
for name, q, fn in (("int 2", 2, orig), ("exact 8/3", 8 / 3, exact), ("none", None, orig)):
    cost.tile_passes = fn
    p = dataclasses.replace(prof, metadata=dataclasses.replace(prof.metadata, attention_q_tile=q))
    m = adaptive_prior.fit_profile_cost(p)
    pred = {(t.batch_size, t.ctx, t.k): 1000 * m.predict(cost.step_features([t.ctx] * t.batch_size, [t.k] * t.batch_size, 0, q)) for t in prof.timings}
    errs = [pred[(t.batch_size, t.ctx, t.k)] / t.t_step_ms.median - 1 for t in prof.timings]
    print(name, "rel_rmse %.3f" % m.rel_rmse, "mean|err| %.3f" % np.mean(np.abs(errs)), " ".join(f"B{b}c{c}K{k}:{pred[(b,c,k)]:.0f}/{t:.0f}" for (b,c,k),t in [((t.batch_size,t.ctx,t.k), t.t_step_ms.median) for t in prof.timings] if b == 1))
cost.tile_passes = orig
