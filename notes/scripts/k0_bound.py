"""Upper bounds on any per-request choice's predicted goodput over K = 0 at n requests of one context,
from the adaptive policy's step costs (base, added[i, k], per-step f) with every draft accepted
(thirty-seventh stop: would an exact K = 0 fast path apply at B16 x 512?).
  (1) max(base / (base + f), R base / n), R = max over i, k >= 1 of k / added[i, k];
  (2) max over the total drafts S of (n + S) base / (n (base + a S + f ceil(S / n))),
      a = min over k of added[0, k] / k (all requests alike).
  .venv/bin/python notes/scripts/k0_bound.py EXPERIMENT.yaml ARM"""
import math
import sys

import numpy as np

from specsched.bench.load import load_experiment

exp = load_experiment(sys.argv[1])
p = [a for a in exp.arms if a.name == sys.argv[2]][0].policy.build()
for n, ctx in ((16, 512), (16, 540), (16, 4096), (4, 512), (1, 512)):
    base, added, f = p.costs([ctx] * n)
    k = np.arange(1, added.shape[1])
    r = (k / np.maximum(added[:, 1:], 1e-12)).max()
    b1 = max(base / (base + f), r * base / n)
    a = float((added[0, 1:] / k).min())
    b2 = max((n + s) * base / (n * (base + a * s + f * math.ceil(s / n)))
             for s in range(1, n * (added.shape[1] - 1) + 1))
    print(f"B{n} x {ctx}: base {base * 1e3:.1f} ms, f {f * 1e3:.2f} ms, bound (1) {b1:.3f}, "
          f"bound (2) {b2:.3f}")
