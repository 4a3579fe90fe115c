"""One B = 1 text of a grid run, played noise-free by `trace_sim` (forty-fourth stop): its two
requests' traces (1: the draft's token at that output index matches), the cell's median step per
K, and the adaptive arm's K per step with its speedup over no-spec, for the defaults and each
config given.
  PYTHONPATH=notes/scripts .venv/bin/python notes/scripts/trace_sim_text.py RUN_DIR SCENARIO REP
      ['field=value,...' ...]
e.g. grid 44's B1-ctx4096 replicate 11 'guard_z=9.0' 'idle_decay=0.75'."""
import ast
import random
import sys
from pathlib import Path

import trace_sim as T

run, scen, rep = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
configs = [{}] + [{a.split("=")[0]: ast.literal_eval(a.split("=")[1]) for a in c.split(",") if a}
                  for c in sys.argv[4:]]
obs, steps_of = T.load_run(run)
tr = T.traces(obs)
for i in range(2):
    print(f"text {i}: {''.join(map(str, tr[(scen, rep, i)][:T.OUT_LEN]))}")
ms_k, ms_pre = T.costs(steps_of, scen, rep)
print("median ms per K:", {k: round(v) for k, v in sorted(ms_k.items())})
t0 = T.play(T.PolicyConfig.constant(0).build(), tr, scen, rep, ms_k, ms_pre, random.Random(0),
            noise=0.0)
for over in configs:
    ks: list[int] = []
    t = T.play(T.adaptive(run, over).build(), tr, scen, rep, ms_k, ms_pre, random.Random(0),
               noise=0.0, ks=ks)
    print(f"{over or 'defaults'}: {t0 / t:.3f}x no-spec  K per step {''.join(map(str, ks))}")
