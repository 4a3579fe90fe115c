"""The adaptive policy's choice of K for one step, given its estimates (a pure function): the
goodput-optimal K per request (or per step) against the K the requests hold (hysteresis,
`margin`; a grown batch's free descent), or, while a batch drains, the K that finishes it
soonest; and no drafting at all unless it is predicted to gain `min_gain`.
No torch here; numpy only.
"""

from __future__ import annotations

import numpy as np

from specsched.policy.acceptance_stats import expected_tokens_table
from specsched.policy.adaptive_config import AdaptiveConfig
from specsched.policy.cost import CTX_UNIT
from specsched.policy.drain import best_drain, drain_seconds
from specsched.policy.optimize import (
    Choice,
    best_for_poorer_text,
    best_per_request,
    best_per_step,
    evaluate,
    refine,
    robust_split,
)
from specsched.policy.step_costs import Costs


def choose(cfg: AdaptiveConfig, per_request: bool, acc: np.ndarray, ctx: list[int],
           costs: Costs, caps: np.ndarray, anchor: np.ndarray, theta: np.ndarray,
           remaining: np.ndarray | None = None, grew: bool = False,
           evidence: np.ndarray | None = None,
           ) -> tuple[np.ndarray, float]:  # ([n] K per request, predicted gain over K = 0)
    """K per request and its predicted goodput over K = 0's. acc [n, max_k]: the requests'
    acceptance estimates; costs: (T at K = 0, seconds each request's k drafts add [n, max_k + 1],
    seconds per draft step); caps, anchor [n]: the most each may draft, the K it holds; theta:
    the online cost model's coefficients. `remaining` [n] (tokens each request has left; given
    while the batch drains): K that finishes the batch soonest (`drain`): the throughput choice
    gives a request whose mates are near their ends the shallow K their capped drafts can pay
    for, and leaves it to finish alone (measured: `AdaptiveConfig.drain_aware`). grew: the
    batch has more decoding requests than at the last decision (`free_descent`). evidence
    [n, max_k]: the verifies behind each estimate of acc; with `split_z` > 0, requests get
    different K only where that survives their SEs (`optimize.robust_split`)."""
    tokens = expected_tokens_table(acc)  # [n, max_k + 1]
    base, added, per_step = costs
    if remaining is not None and per_request:
        c = np.asarray(ctx, dtype=np.float64) / CTX_UNIT  # [n]
        # [n]: what each request adds to a K = 0 step (`cost.predict` of it alone, less a)
        shares = np.maximum(theta[0] + theta[1] + theta[2] * c, 1e-6) - theta[0]
        parts = np.concatenate([[base - shares.sum()], shares])  # [n + 1]
        ks, seconds = best_drain(tokens, parts, added, per_step, caps, remaining, lambda: (
            best_per_request(tokens, base, added, per_step, caps).ks))
        held = float(drain_seconds(tokens, parts, added, per_step, anchor, remaining))
        if held <= seconds * (1.0 + cfg.margin):
            ks = anchor
        plain = evaluate(tokens, base, added, per_step, np.zeros_like(ks)).goodput
        return ks, evaluate(tokens, base, added, per_step, ks).goodput / max(plain, 1e-12)
    if per_request:
        best = best_per_request(tokens, base, added, per_step, caps)
        if evidence is not None and cfg.split_z > 0:
            best = robust_split(acc, evidence, cfg.split_z, base, added, per_step, caps, best)
    else:
        _k, best = best_per_step(tokens, base, added, per_step, caps)
        anchor = np.minimum(int(anchor.max()), caps)  # one K per step
    kept: Choice = evaluate(tokens, base, added, per_step, anchor)
    # once the batch has grown, the margin guards rises only: a descent (no request deeper,
    # one shallower) predicted no worse is taken at once. A K chosen while the batch was small
    # (K = 5 at B = 2, where deep drafts pay) was held at B = 4 for 2-3 steps of 234 ms against
    # K = 2's 121, within the margin (the demo's B4 x 512 waves, 2026-12-06: 4 of 12
    # replicates). Not at every step: noisy estimates would ratchet K down (the simulator:
    # -0.2 %, B = 1 x 4096 at 0.8 -2 %).
    descent = (grew and cfg.free_descent and bool((best.ks <= anchor).all())
               and bool((best.ks < anchor).any()) and best.goodput >= kept.goodput)
    if best.goodput > kept.goodput * (1.0 + cfg.margin) or descent:
        ks = best.ks
    elif not per_request:
        ks = anchor
    else:
        ks = refine(tokens, added, kept, best.ks, cfg.margin)
    plain = evaluate(tokens, base, added, per_step, np.zeros_like(ks)).goodput
    gain = evaluate(tokens, base, added, per_step, ks).goodput / max(plain, 1e-12)
    if ks.any() and gain < 1.0 + cfg.min_gain:  # drafting must earn its risk
        return np.zeros_like(ks), 1.0
    return ks, gain


def start_ks(cfg: AdaptiveConfig, per_request: bool, ramping: np.ndarray, acc: np.ndarray,
             costs: Costs, caps: np.ndarray) -> np.ndarray:  # [n]
    """Where a request's slow start begins (`ramping` [n]: whose context bucket holds no
    evidence of this run yet): the K chosen for the batch as it is estimated, with every
    ramping request as if its text accepted `start_spread` less per position (0 for all where
    none ramps). Where even such a text pays for deep drafts (dear steps whatever K: long
    contexts) the ramp is skipped; where drafts are dear against the step it starts at K = 1
    (`AdaptiveConfig.start_k`)."""
    if not ramping.any() or cfg.start_spread >= 1.0:
        return np.zeros(len(ramping), dtype=np.int64)
    return best_for_poorer_text(acc, ramping, cfg.start_spread, *costs, caps, per_request)
