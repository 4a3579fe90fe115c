"""The guard state (trips, guarded_until, steps) of each cell per decided step, for grid 44's
B1-ctx4096 replicate 11 played noise-free by trace_sim (forty-fourth stop). Prints every step.
  PYTHONPATH=notes/scripts .venv/bin/python notes/scripts/guard_trips_text.py"""
import random
from pathlib import Path

import trace_sim as T

RUN = Path("benchmarks/results/adaptive/grid-one-run-44-2026-12-07-avx512-rep21")
SCEN, REP = "B1-ctx4096", 11


class Spy:
    """The adaptive policy, its cells' guard state logged at every decision."""

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


obs, steps_of = T.load_run(RUN)
tr = T.traces(obs)
ms_k, ms_pre = T.costs(steps_of, SCEN, REP)
spy = Spy(T.adaptive(RUN, {}).build())
T.play(spy, tr, SCEN, REP, ms_k, ms_pre, random.Random(0), noise=0.0)
for i, (ks, state) in enumerate(spy.log):
    print(i, ks, state)
