"""One B = 1 text of a grid run, played noise-free by `trace_sim` (forty-fourth stop): its two
requests' traces (1: the draft's token at that output index matches), the cell's median step per
K, and the adaptive arm's K per step with its speedup over no-spec, for the defaults and each
config given. --guard: also the guard's state of each cell (trips, guarded_until, steps) at every
decision of the defaults.
  PYTHONPATH=notes/scripts .venv/bin/python notes/scripts/trace_sim_text.py RUN_DIR SCENARIO REP
      [--guard] ['field=value,...' ...]
e.g. grid 44's B1-ctx4096 replicate 11 'guard_z=9.0' 'idle_decay=0.75'."""
import argparse
import ast
import random
from pathlib import Path

import trace_sim as T


class GuardSpy:
    """A policy whose cells' guard state is logged at every decision."""

    def __init__(self, policy) -> None:
        self.p, self.log = policy, []

    max_k = property(lambda self: self.p.max_k)

    def decide(self, batch):
        d = self.p.decide(batch)
        state = {c: (v.trips, v.guarded_until, v.steps) for c, v in self.p.cell_state.items()}
        self.log.append((d.num_spec_tokens, state))
        return d

    def observe(self, outcome) -> None:
        self.p.observe(outcome)


ap = argparse.ArgumentParser()
ap.add_argument("run", type=Path)
ap.add_argument("scenario")
ap.add_argument("rep", type=int)
ap.add_argument("configs", nargs="*")
ap.add_argument("--guard", action="store_true")
args = ap.parse_intermixed_args()
run, scen, rep = args.run, args.scenario, args.rep
configs = [{}] + [{a.split("=")[0]: ast.literal_eval(a.split("=")[1]) for a in c.split(",") if a}
                  for c in args.configs]
obs, steps_of = T.load_run(run)
tr = T.traces(obs)
for i in range(2):
    print(f"text {i}: {''.join(map(str, tr[(scen, rep, i)][:T.OUT_LEN]))}")
ms_k, ms_pre = T.costs(steps_of, scen, rep)
print("median ms per K:", {k: round(v) for k, v in sorted(ms_k.items())})
t0 = T.play(T.PolicyConfig.constant(0).build(), tr, scen, rep, ms_k, ms_pre, random.Random(0),
            noise=0.0)
for n, over in enumerate(configs):
    ks: list[int] = []
    policy = T.adaptive(run, over).build()
    if args.guard and n == 0:
        policy = GuardSpy(policy)
    t = T.play(policy, tr, scen, rep, ms_k, ms_pre, random.Random(0), noise=0.0, ks=ks)
    print(f"{over or 'defaults'}: {t0 / t:.3f}x no-spec  K per step {''.join(map(str, ks))}")
    if isinstance(policy, GuardSpy):
        for i, (decided, state) in enumerate(policy.log):
            print(f"  decision {i}: K {decided} guard {state}")
