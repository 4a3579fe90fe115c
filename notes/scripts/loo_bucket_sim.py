"""Would a leave-one-out bucket help (thirty-ninth stop)? A request's acceptance shrinks toward
its context bucket's, and the bucket holds the request's own verifies too: at B = 1 one early
miss counts twice (grid 39 B1 x 4096 replicate 5: position 1 0.91 -> 0.55 = 4/5 of (3 x 0.91 +
0) / 4). This patches `AcceptanceBook.acceptance` to shrink each request toward its bucket
WITHOUT its own counts (subtracted, clipped at 0: the request's and the cells' decays differ, so
the subtraction is approximate) and runs another script under the patch:
  .venv/bin/python notes/scripts/loo_bucket_sim.py notes/scripts/policy_sim.py [args ...]
  LOO=0 ... (the same run unpatched, for the side-by-side)"""
import os
import runpy
import sys
from itertools import islice

import numpy as np

from specsched.policy import adaptive_acceptance as aa
from specsched.policy.acceptance_stats import AcceptanceCounts, posterior_batch, shrinkage_weight


def acceptance(self, reqs, ctx):  # type: ignore[no-untyped-def]
    population = islice(reversed(self.requests.values()), max(len(reqs), aa.RECENT_REQUESTS))
    w = shrinkage_weight([r.counts for r in population], self.cfg.request_prior_weight)
    tested = np.stack([r.counts.tested for r in reqs])  # [n, max_k]
    accepted = np.stack([r.counts.accepted for r in reqs])  # [n, max_k]
    priors = []
    for r, c in zip(reqs, ctx, strict=True):
        bucket = aa.cell_of(1, c)[1]
        total = AcceptanceCounts(self.cfg.max_k)
        for (_, cb), counts in self.cells.items():
            if cb == bucket:
                total.merge(counts)
        total.tested = np.maximum(total.tested - r.counts.tested, 0.0)
        total.accepted = np.minimum(np.maximum(total.accepted - r.counts.accepted, 0.0),
                                    total.tested)
        priors.append(total.posterior(self._ctx_prior[bucket], self.cfg.cell_prior_weight))
    return posterior_batch(tested, accepted, np.stack(priors), w)


if os.environ.get("LOO", "1") != "0":
    aa.AcceptanceBook.acceptance = acceptance  # type: ignore[method-assign]
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
