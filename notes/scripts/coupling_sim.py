"""Would a weaker coupling of deeper acceptance to the first position help (fortieth stop)? The
adaptive policy tilts the prior of positions >= 2 by how far position 1's posterior moved
(logit shift, coupling 1); `depth_coupling.py` found that right at B1 x 512 and wrong at
B1 x 4096. This patches both posteriors (`AcceptanceCounts.posterior`, `posterior_batch`) to
scale the shift by BETA and runs another script under the patch:
  BETA=0.5 .venv/bin/python notes/scripts/coupling_sim.py notes/scripts/phases_sim.py [args ...]
  (BETA=1: the shipped rule)"""
import os
import runpy
import sys

import numpy as np

from specsched.policy import acceptance_stats as st
from specsched.policy import adaptive_acceptance as aa

BETA = float(os.environ.get("BETA", "1"))


def posterior(self, prior, prior_weight):  # type: ignore[no-untyped-def]
    w = prior_weight
    post0 = (self.accepted[0] + w * prior[0]) / (self.tested[0] + w)
    shift = BETA * (st._logit(post0) - st._logit(float(prior[0])))
    target = st._sigmoid(st._logit_array(prior) + shift)
    target[0] = prior[0]
    return (self.accepted + w * target) / (self.tested + w)


def posterior_batch(tested, accepted, prior, prior_weight):  # type: ignore[no-untyped-def]
    w = prior_weight
    post0 = (accepted[:, 0] + w * prior[:, 0]) / (tested[:, 0] + w)
    shift = BETA * (st._logit_array(post0) - st._logit_array(prior[:, 0]))
    target = st._sigmoid(st._logit_array(prior) + shift[:, None])
    target[:, 0] = prior[:, 0]
    return (accepted + w * target) / (tested + w)


assert np  # numpy arrays flow through the patched functions
st.AcceptanceCounts.posterior = posterior  # type: ignore[method-assign]
aa.posterior_batch = posterior_batch  # type: ignore[assignment]
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
