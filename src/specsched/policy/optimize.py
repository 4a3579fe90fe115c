"""Choose K to maximize goodput = Σ expected tokens / expected step time (pure numpy).

With the step cost model of `cost` (T = base + Σ_i C_i(K_i) + f·max K_i, C_i(k) what request i's
k drafts add to the step — c_i·k with c_i = d + e·ctx_i, plus the attention tile term where k
crosses a tile — and f the cost of one more sequential draft step), the best K per request
solves a ratio maximization: Dinkelbach's method (Dinkelbach 1967) iterates
    K_i = argmax_k E_i(k) - g·C_i(k)  (for a fixed bound m on max K),   g <- Σ E_i(K_i) / T(K),
which increases g monotonically to the optimum for that m; every m in 0..max_k is tried at once
(arrays [m, request, k]) and the best kept. Per step (one K for the batch, as vLLM requires), the
candidates are just K = 0..max_k.
No torch here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

DINKELBACH_ITERATIONS = 4


class Choice(NamedTuple):
    ks: np.ndarray  # [n] int: K per request
    goodput: float  # expected tokens per second at ks
    seconds: float  # expected step time at ks


def cost_table(draft_cost: np.ndarray, width: int) -> np.ndarray:  # [n, width]
    """C_i(k): a table as it is, or per-draft costs c_i [n] as c_i·k."""
    if draft_cost.ndim == 2:
        return draft_cost
    return draft_cost[:, None] * np.arange(width)[None, :]


def step_seconds(base: float, draft_cost: np.ndarray, step_cost: float, ks: np.ndarray) -> float:
    """T(K) = base + Σ C_i(K_i) + f·max K_i. draft_cost: C [n, M + 1], or c [n] (C_i(k) = c_i·k)."""
    width = int(ks.max()) + 1 if len(ks) else 1
    table = cost_table(draft_cost, width)
    added = float(table[np.arange(len(ks)), ks].sum()) if len(ks) else 0.0
    return base + added + step_cost * (float(ks.max()) if len(ks) else 0)


def evaluate(tokens: np.ndarray, base: float, draft_cost: np.ndarray, step_cost: float,
             ks: np.ndarray) -> Choice:
    """Goodput of a given K vector. tokens: [n, max_k + 1] expected tokens per K."""
    t = max(step_seconds(base, draft_cost, step_cost, ks), 1e-9)
    got = float(tokens[np.arange(len(ks)), ks].sum())
    return Choice(ks, got / t, t)


def best_per_request(
    tokens: np.ndarray,  # [n, M + 1] expected tokens per request and K
    base: float,  # T with every K = 0
    draft_cost: np.ndarray,  # [n, M + 1] seconds request i's k drafts add (C_i), or [n] c_i
    step_cost: float,  # seconds per sequential draft step (f)
    caps: np.ndarray,  # [n] int: most K each request may draft
) -> Choice:
    """The goodput-maximizing K per request (see module doc)."""
    n, width = tokens.shape
    karr = np.arange(width)  # [M + 1]
    bounds = np.arange(width)[:, None]  # [m, 1]: the bound on max K tried
    allowed = karr[None, None, :] <= np.minimum(bounds, caps[None, :])[:, :, None]  # [m, n, k]
    g = np.full(width, tokens[:, 0].sum() / max(base, 1e-9))  # [m] start: plain decoding
    cost = cost_table(draft_cost, width)  # [n, k]
    ks = np.zeros((width, n), dtype=np.int64)
    for _ in range(DINKELBACH_ITERATIONS):
        score = tokens[None] - g[:, None, None] * cost[None]  # [m, n, k]
        score = np.where(allowed, score, -np.inf)
        ks = score.argmax(axis=-1)  # [m, n]
        got = np.take_along_axis(tokens[None].repeat(width, 0), ks[..., None], -1)[..., 0]
        added = np.take_along_axis(cost[None].repeat(width, 0), ks[..., None], -1)[..., 0]
        t = base + added.sum(-1) + step_cost * ks.max(-1)  # [m]
        g = got.sum(-1) / np.maximum(t, 1e-9)
    best = int(np.argmax(g))
    return evaluate(tokens, base, draft_cost, step_cost, ks[best])


def best_per_step(
    tokens: np.ndarray, base: float, draft_cost: np.ndarray, step_cost: float, caps: np.ndarray
) -> tuple[int, Choice]:
    """The goodput-maximizing single K (each request drafts min(K, cap_i))."""
    best: tuple[int, Choice] | None = None
    for k in range(tokens.shape[1]):
        choice = evaluate(tokens, base, draft_cost, step_cost, np.minimum(k, caps))
        if best is None or choice.goodput > best[1].goodput:
            best = (k, choice)
    assert best is not None
    return best


def refine(
    tokens: np.ndarray,  # [n, M + 1]
    draft_cost: np.ndarray,  # [n, M + 1] C_i(k), or [n] c_i
    kept: Choice,  # the current K vector and its goodput g
    best: np.ndarray,  # [n] the optimizer's K vector
    margin: float,
) -> np.ndarray:  # [n]
    """Per-request hysteresis when the whole batch is not worth a switch: request i moves from
    its current K to the optimizer's (never above the current max K, whose draft steps are paid
    anyway) when its own Dinkelbach score E_i(k) - g·C_i(k) improves by more than `margin` x its
    current expected tokens. A request that stopped accepting drops to K = 0 even when its share
    of the batch's goodput is below the batch-level margin."""
    ks = kept.ks.copy()
    bound = int(ks.max()) if len(ks) else 0
    rows = np.arange(len(ks))
    target = np.minimum(best, bound)
    cost = cost_table(draft_cost, tokens.shape[1])  # [n, M + 1]
    score_now = tokens[rows, ks] - kept.goodput * cost[rows, ks]
    score_new = tokens[rows, target] - kept.goodput * cost[rows, target]
    move = score_new - score_now > margin * tokens[rows, ks]
    ks[move] = target[move]
    return ks


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
    start: np.ndarray,  # [n] int: a K vector to improve (the throughput choice)
) -> tuple[np.ndarray, float]:  # ([n] K per request, its drain seconds)
    """K per request that finishes a draining batch soonest (`drain_seconds`). Every K vector
    when there are at most BRUTE_FORCE_VECTORS (a batch of 4 at K <= 5: 1296); else
    coordinate descent from `start`, from K = 0 and from every request's cap, all three at
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
    ks = np.stack([np.minimum(start, caps), np.zeros_like(caps), caps])  # [3, n]
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
