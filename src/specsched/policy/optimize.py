"""Choose K to maximize goodput = Σ expected tokens / expected step time (pure numpy).

With the step cost model of `cost` (T = base + Σ_i C_i(K_i) + f·max K_i, C_i(k) what request i's
k drafts add to the step — c_i·k with c_i = d + e·ctx_i, plus the attention tile term where k
crosses a tile — and f the cost of one more sequential draft step), the best K per request
solves a ratio maximization: Dinkelbach's method (Dinkelbach 1967) iterates
    K_i = argmax_k E_i(k) - g·C_i(k)  (for a fixed bound m on max K),   g <- Σ E_i(K_i) / T(K),
which increases g monotonically to the optimum for that m; every m in 0..max_k is tried at once
(arrays [m, request, k]) and the best kept. Per step (one K for the batch, as vLLM requires), the
candidates are just K = 0..max_k. (A draining batch minimizes its finishing time instead:
`drain`.)
No torch here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from specsched.policy.acceptance_stats import expected_tokens_table

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
    rows = np.arange(n)[None, :]  # [1, n]
    for _ in range(DINKELBACH_ITERATIONS):
        score = tokens[None] - g[:, None, None] * cost[None]  # [m, n, k]
        score = np.where(allowed, score, -np.inf)
        ks = score.argmax(axis=-1)  # [m, n]
        got = tokens[rows, ks]  # [m, n]
        added = cost[rows, ks]  # [m, n]
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


def robust_split(
    acc: np.ndarray,  # [n, M] acceptance per request and draft position
    evidence: np.ndarray,  # [n, M] verifies (real + borrowed) behind each estimate
    z: float,  # how many standard errors the split must survive
    base: float, draft_cost: np.ndarray, step_cost: float, caps: np.ndarray,
    split: Choice,  # the per-request optimum
) -> Choice:
    """The per-request optimum only where it beats the best single K (capped per request) with
    every estimate moved z binomial SEs against it: a request the split drafts deeper than the
    single K accepts less, one it drafts shallower accepts more. Else the single K. Requests
    whose estimates differ by noise get one K (a row held a step below its mates falls behind
    and finishes alone: the forty-second stop's B4 x 512); a straggler whose own evidence says
    it accepts far less than its mates still gets its own K."""
    if z <= 0 or (split.ks == split.ks[0]).all():  # no split to test (most steps)
        return split
    tokens = expected_tokens_table(acc)  # [n, M + 1]
    _k, single = best_per_step(tokens, base, draft_cost, step_cost, caps)
    if (split.ks == single.ks).all():
        return split
    se = np.sqrt(acc * (1.0 - acc) / np.maximum(evidence, 1.0))  # [n, M]
    sign = np.sign(split.ks - single.ks).astype(np.float64)[:, None]  # [n, 1]: +1 deeper
    adverse = expected_tokens_table(np.clip(acc - sign * z * se, 0.0, 1.0))  # [n, M + 1]
    if (evaluate(adverse, base, draft_cost, step_cost, split.ks).goodput
            > evaluate(adverse, base, draft_cost, step_cost, single.ks).goodput):
        return split
    return single


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


def best_for_poorer_text(
    acceptance: np.ndarray,  # [n, M] per request and draft position
    poorer: np.ndarray,  # [n] bool: the requests whose text may accept less than estimated
    spread: float,  # how much less per position
    base: float, draft_cost: np.ndarray, step_cost: float, caps: np.ndarray,
    per_request: bool,
) -> np.ndarray:  # [n] int
    """K per request (or one K, capped per request) for the batch as estimated, with the
    `poorer` requests' acceptance lowered by `spread` at every position (a slow start's first
    K: `AdaptivePolicy._start_ks`)."""
    a = np.where(poorer[:, None], np.clip(acceptance - spread, 0.0, 1.0), acceptance)
    tokens = expected_tokens_table(a)  # [n, M + 1]
    if per_request:
        return best_per_request(tokens, base, draft_cost, step_cost, caps).ks
    return best_per_step(tokens, base, draft_cost, step_cost, caps)[1].ks
