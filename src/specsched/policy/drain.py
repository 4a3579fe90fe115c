"""K per request for a draining batch: requests finish and none take their place, so the batch's
wall is its last request's, and K should finish it soonest rather than earn the most tokens per
second (pure numpy).

`drain_seconds` is the expected time until every request is done, each drafting its K until its
remaining tokens are out at E_i(K_i) a step, each step costing what the requests still running
cost (T = fixed + Σ_running (share_i + C_i(K_i)) + f·max_running K_i, the cost model of
`optimize`). `best_drain` minimizes it: exactly over every K vector while there are few, else by
coordinate descent. A first version held the batch fixed until its last request finished
(max_i remaining_i / E_i x T(K)): it gave a laggard K = 4 in a 3-row batch whose mates would have
left in 2-4 cheap steps and lost 3 % in the simulator; mates leaving is most of a drain's saving.
No torch here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from specsched.policy.optimize import cost_table

DRAIN_PASSES = 4  # coordinate-descent passes of `best_drain`
BRUTE_FORCE_VECTORS = 4096  # `best_drain` tries every K vector up to this many


def drain_seconds(
    tokens: np.ndarray,  # [n, M + 1] expected tokens per request and K
    base: np.ndarray,  # [n + 1]: the step's fixed seconds, then what each request adds at K = 0
    draft_cost: np.ndarray,  # [n, M + 1] C_i(k), or [n] c_i
    step_cost: float,
    ks: np.ndarray,  # [c, n] or [n] int: K vectors
    remaining: np.ndarray,  # [n] tokens each request still has to produce
) -> np.ndarray:  # [c] (or a 0-d array for one K vector)
    """Expected seconds until every request of a batch that takes no new ones has finished,
    each request drafting its K until it is done: request i needs remaining_i / E_i(K_i) steps,
    and each step costs what the requests still running cost (the fixed part, each one's
    K = 0 share and its drafts, the draft steps of the deepest K among them)."""
    one = ks.ndim == 1
    ks = np.atleast_2d(ks)  # [c, n]
    n = ks.shape[1]
    rows = np.arange(n)[None, :]
    width = int(ks.max(initial=0)) + 1
    cost = cost_table(draft_cost, max(width, tokens.shape[1]))  # [n, k]
    need = remaining[None, :] / np.maximum(tokens[rows, ks], 1e-9)  # [c, n] steps
    order = np.argsort(need, axis=1)  # [c, n]: who finishes first
    need_sorted = np.take_along_axis(need, order, 1)
    share = base[1:][None, :] + cost[rows, ks]  # [c, n]: what each adds to a step
    share_sorted = np.take_along_axis(share, order, 1)
    k_sorted = np.take_along_axis(ks, order, 1)
    # segment j: from the (j-1)-th finish to the j-th, requests j.. still run
    alive = np.cumsum(share_sorted[:, ::-1], axis=1)[:, ::-1]  # [c, n]
    deepest = np.maximum.accumulate(k_sorted[:, ::-1], axis=1)[:, ::-1]  # [c, n]
    t = base[0] + alive + step_cost * deepest  # [c, n] step time in segment j
    span = np.diff(need_sorted, axis=1, prepend=0.0)  # [c, n]
    out = (span * t).sum(1)
    return out[0] if one else out


def best_drain(
    tokens: np.ndarray,  # [n, M + 1]
    base: np.ndarray,  # [n + 1] (see `drain_seconds`)
    draft_cost: np.ndarray,  # [n, M + 1] C_i(k), or [n] c_i
    step_cost: float,
    caps: np.ndarray,  # [n] int
    remaining: np.ndarray,  # [n]
    start: Callable[[], np.ndarray],  # () -> [n] int: a K vector to improve (the throughput
    # choice; called only when the batch is too large for every vector to be tried)
) -> tuple[np.ndarray, float]:  # ([n] K per request, its drain seconds)
    """K per request that finishes a draining batch soonest (`drain_seconds`). Every K vector
    when there are at most BRUTE_FORCE_VECTORS (a batch of 4 at K <= 5: 1296); else
    coordinate descent from `start()`, from K = 0 and from every request's cap, all three at
    once: each pass tries every request at every K it may draft and keeps each start's best
    single change. The request with the most work left drafts deep; a mate near its end drafts
    little or nothing (its drafts make the laggard's steps dearer), and the more it drafts,
    the sooner it leaves the batch: both are in the expectation."""
    n, width = tokens.shape
    caps = np.minimum(caps, width - 1)
    if float(np.prod(caps + 1.0)) <= BRUTE_FORCE_VECTORS:
        every = np.stack(np.meshgrid(*[np.arange(c + 1) for c in caps], indexing="ij"),
                         -1).reshape(-1, n)  # [v, n]
        t = drain_seconds(tokens, base, draft_cost, step_cost, every, remaining)
        j = int(np.argmin(t))
        return every[j], float(t[j])
    ks = np.stack([np.minimum(start(), caps), np.zeros_like(caps), caps])  # [3, n]
    s = drain_seconds(tokens, base, draft_cost, step_cost, ks, remaining)  # [3]
    who, k = np.divmod(np.arange(n * width), width)  # one move per (request, K)
    k = np.minimum(k, caps[who])
    for _ in range(DRAIN_PASSES):
        moves = np.repeat(ks, n * width, 0)  # [3 * n * width, n]
        moves[np.arange(len(moves)), np.tile(who, 3)] = np.tile(k, 3)
        t = drain_seconds(tokens, base, draft_cost, step_cost, moves, remaining)
        t = t.reshape(3, n * width)
        j = t.argmin(1)  # [3]
        better = t[np.arange(3), j] < s * (1 - 1e-12)
        if not better.any():
            break
        ks = np.where(better[:, None], moves.reshape(3, n * width, n)[np.arange(3), j], ks)
        s = np.where(better, t[np.arange(3), j], s)
    b = int(np.argmin(s))
    return ks[b], float(s[b])
