"""Choose K to maximize goodput = Σ expected tokens / expected step time (pure numpy).

With the step cost model of `cost` (T = base + Σ_i c_i·K_i + f·max K_i, c_i = d + e·ctx_i the cost
of one more draft of request i, f the cost of one more sequential draft step), the best K per
request solves a ratio maximization: Dinkelbach's method (Dinkelbach 1967) iterates
    K_i = argmax_k E_i(k) - g·c_i·k  (for a fixed bound m on max K),   g <- Σ E_i(K_i) / T(K),
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


def step_seconds(base: float, draft_cost: np.ndarray, step_cost: float, ks: np.ndarray) -> float:
    """T(K) = base + Σ c_i K_i + f·max K_i."""
    return base + float(np.dot(draft_cost, ks)) + step_cost * (float(ks.max()) if len(ks) else 0)


def evaluate(tokens: np.ndarray, base: float, draft_cost: np.ndarray, step_cost: float,
             ks: np.ndarray) -> Choice:
    """Goodput of a given K vector. tokens: [n, max_k + 1] expected tokens per K."""
    t = max(step_seconds(base, draft_cost, step_cost, ks), 1e-9)
    got = float(tokens[np.arange(len(ks)), ks].sum())
    return Choice(ks, got / t, t)


def best_per_request(
    tokens: np.ndarray,  # [n, M + 1] expected tokens per request and K
    base: float,  # T with every K = 0
    draft_cost: np.ndarray,  # [n] seconds per draft token of each request (c_i)
    step_cost: float,  # seconds per sequential draft step (f)
    caps: np.ndarray,  # [n] int: most K each request may draft
) -> Choice:
    """The goodput-maximizing K per request (see module doc)."""
    n, width = tokens.shape
    karr = np.arange(width)  # [M + 1]
    bounds = np.arange(width)[:, None]  # [m, 1]: the bound on max K tried
    allowed = karr[None, None, :] <= np.minimum(bounds, caps[None, :])[:, :, None]  # [m, n, k]
    g = np.full(width, tokens[:, 0].sum() / max(base, 1e-9))  # [m] start: plain decoding
    cost = draft_cost[:, None] * karr[None, :]  # [n, k]
    ks = np.zeros((width, n), dtype=np.int64)
    for _ in range(DINKELBACH_ITERATIONS):
        score = tokens[None] - g[:, None, None] * cost[None]  # [m, n, k]
        score = np.where(allowed, score, -np.inf)
        ks = score.argmax(axis=-1)  # [m, n]
        got = np.take_along_axis(tokens[None].repeat(width, 0), ks[..., None], -1)[..., 0]
        t = base + (draft_cost[None] * ks).sum(-1) + step_cost * ks.max(-1)  # [m]
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
    draft_cost: np.ndarray,  # [n]
    kept: Choice,  # the current K vector and its goodput g
    best: np.ndarray,  # [n] the optimizer's K vector
    margin: float,
) -> np.ndarray:  # [n]
    """Per-request hysteresis when the whole batch is not worth a switch: request i moves from
    its current K to the optimizer's (never above the current max K, whose draft steps are paid
    anyway) when its own Dinkelbach score E_i(k) - g·c_i·k improves by more than `margin` x its
    current expected tokens. A request that stopped accepting drops to K = 0 even when its share
    of the batch's goodput is below the batch-level margin."""
    ks = kept.ks.copy()
    bound = int(ks.max()) if len(ks) else 0
    rows = np.arange(len(ks))
    target = np.minimum(best, bound)
    score_now = tokens[rows, ks] - kept.goodput * draft_cost * ks
    score_new = tokens[rows, target] - kept.goodput * draft_cost * target
    move = score_new - score_now > margin * tokens[rows, ks]
    ks[move] = target[move]
    return ks
