"""An upward probe, prototyped outside the policy and scored on trace_sim_b4's demos (forty-second
stop): every `every`-th step at which the adaptive policy gives all rows of a full batch one K
(0 < K < max_k), the step drafts K + 1 instead (capped by each row's room); the policy observes
that step as it ran (its acceptance and cost models learn from it). Question: does the online
cost model then learn a cheaper K + 1 than the profile's shape says, and choose it?
  PYTHONPATH=notes/scripts .venv/bin/python notes/scripts/trace_sim_b4_upprobe.py [every ...]"""
import collections
import dataclasses
import math
import sys

import numpy as np

import trace_sim_b4 as T


class UpProbe:
    def __init__(self, policy, every: int, rows: int) -> None:
        self.p, self.every, self.rows, self.n, self.probes = policy, every, rows, 0, 0
        self.ks_after = []  # the K chosen at full batch after the first probe

    max_k = property(lambda self: self.p.max_k)

    def decide(self, batch):
        d = self.p.decide(batch)
        ks = d.num_spec_tokens
        if len(ks) == self.rows and len(set(ks)) == 1 and 0 < ks[0] < self.p.max_k:
            if self.probes:
                self.ks_after.append(ks[0])
            self.n += 1
            if self.n % self.every == 0:
                room = batch.room or (self.p.max_k,) * len(ks)
                new = tuple(min(k + 1, max(r, 0)) for k, r in zip(ks, room))
                self.probes += 1
                return dataclasses.replace(d, num_spec_tokens=new, step_k=max(new))
        return d

    def observe(self, outcome) -> None:
        self.p.observe(outcome)


def main() -> None:
    everies = [int(a) for a in sys.argv[1:]] or [8, 16]
    logs = collections.defaultdict(list)
    after = collections.defaultdict(collections.Counter)
    for demo in T.DEMOS:
        exp, cells, fits = T.load(demo)
        for (scen, _rep), cell in cells.items():
            coef = fits[scen]
            t2 = T.play(T.arm_policy(exp, "2-D").build(), cell, coef)
            logs[(scen, "adaptive")].append(math.log(t2 / T.play(
                T.arm_policy(exp, "adaptive").build(), cell, coef)))
            for e in everies:
                w = UpProbe(T.arm_policy(exp, "adaptive").build(), e, cell.conc)
                logs[(scen, f"up-probe every {e}")].append(math.log(t2 / T.play(w, cell, coef)))
                after[(scen, e)].update(w.ks_after)
    for key, v in sorted(logs.items()):
        print(f"{key[0]} {key[1]} / 2-D: {math.exp(float(np.mean(v))):.4f}")
    for key, c in sorted(after.items()):
        print(f"{key[0]} every {key[1]}: full-batch K after a probe {dict(sorted(c.items()))}")


if __name__ == "__main__":
    main()
