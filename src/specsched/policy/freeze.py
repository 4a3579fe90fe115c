"""Freeze what an adaptive policy learned into a static 5-item schedule (`check`/`export` accept
it), so an operator can deploy it where no closed loop runs (stock vLLM with the scheduler class).

For every cell of the policy's grid (batch bucket x context bucket) the one K per step that
maximizes predicted goodput for B requests at that context — B and context at the bucket's
geometric middle, acceptance learned for the context bucket, the learned step cost model — is
written as an entry `[bs_lo, bs_hi, ctx_lo, ctx_hi, K]`; the last ranges are open-ended.
No torch here.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from specsched.policy.acceptance_stats import expected_tokens_table
from specsched.policy.adaptive import AdaptivePolicy
from specsched.policy.adaptive_config import BATCH_BUCKETS, CTX_BUCKETS
from specsched.policy.optimize import best_per_step
from specsched.schedule.model import INF, Schedule
from specsched.schedule.parse import parse_schedule


def _ranges(los: tuple[int, ...]) -> list[tuple[int, int]]:
    return [(lo, hi - 1) for lo, hi in itertools.pairwise(los)] + [(los[-1], INF)]


def _middle(lo: int, hi: int) -> int:
    return lo if hi >= INF else max(lo, round(math.sqrt(lo * hi)))


def freeze_schedule(policy: AdaptivePolicy) -> Schedule:
    """The learned grid as a 5-item schedule (see module doc)."""
    entries: list[list[int]] = []
    for b_lo, b_hi in _ranges(BATCH_BUCKETS):
        b = _middle(b_lo, b_hi) if b_hi < INF else 2 * b_lo
        for cb, (c_lo, c_hi) in enumerate(_ranges(CTX_BUCKETS)):
            ctx = _middle(c_lo, c_hi) if c_hi < INF else 2 * c_lo
            a = np.tile(policy.bucket_acceptance(cb), (b, 1))  # [b, max_k]
            base, added, per_step = policy.costs([ctx] * b)
            caps = np.full(b, policy.max_k)
            k, _ = best_per_step(expected_tokens_table(a), base, added, per_step, caps)
            entries.append([b_lo, b_hi, c_lo, c_hi, k])
    return parse_schedule(entries)
