"""Processed sampling distributions (temperature, top-k, top-p) and seeded categorical sampling.

Speculative verification is lossless only with respect to the distribution both sides use: the
target probabilities `p` and the draft probabilities `q` handed to
`specsched.engine.spec.verify.verify_sampling` must be the *processed* distributions (after
temperature, top-k and top-p, the same settings per request), and the draft tokens must have been
sampled from exactly that `q`. Then every output token follows the processed target `p`, the
distribution plain (non-speculative) sampling with the same settings would use (Leviathan et al.
2023, arXiv:2211.17192; Chen et al. 2023, arXiv:2302.01318).

Temperature 0 means greedy: `logits_to_probs` returns a one-hot on the argmax, so greedy and
random requests can be mixed in one `verify_sampling` call (with a one-hot `p`, rejection sampling
reduces to the greedy rule).

Ragged layout: per-request settings are expanded to rows with `expand_per_request`.

Non-finite logits (a model that overflowed) never crash sampling or yield a token outside
[0, V) (`finite_logits`): NaN counts as -inf; a row holding +inf puts all its mass, evenly, on its
+inf entries; a row with no finite entry left (all -inf / NaN) is uniform. Greedy takes the argmax
under the same rule (an all-NaN row gives token 0). Weights given to `sample_from_probs` (and to
verification) that are NaN, infinite or negative count as 0; a row with no positive weight is
uniform.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def finite_logits(logits: torch.Tensor) -> torch.Tensor:  # [N, V] -> [N, V]
    """`logits` with the module's rule for non-finite values applied (see the module doc); the
    same tensor when every value is finite (one check, no copy)."""
    if bool(torch.isfinite(logits).all()):
        return logits
    inf = float("inf")
    x = torch.nan_to_num(logits, nan=-inf, posinf=inf, neginf=-inf)
    pos = x == inf  # [N, V]
    x = torch.where(pos.any(dim=-1, keepdim=True), torch.where(pos, 0.0, -inf), x)
    dead = ~torch.isfinite(x).any(dim=-1, keepdim=True)  # [N, 1] nothing finite left
    return torch.where(dead, torch.zeros_like(x), x)


def finite_weights(probs: torch.Tensor) -> torch.Tensor:  # [N, V] -> [N, V]
    """Non-negative finite weights: NaN, +-inf and negative entries become 0 (no copy when
    already clean). Rows may be all zero; `sample_from_probs` treats those as uniform."""
    if bool((torch.isfinite(probs) & (probs >= 0)).all()):
        return probs
    clean = torch.nan_to_num(probs, nan=0.0, posinf=0.0, neginf=0.0)
    return clean.clamp_min(0.0)


# A top-k of 0 (or >= vocab) and a top-p of 1.0 disable the filter, as in vLLM.
def expand_per_request(
    values: Sequence[float] | Sequence[int] | torch.Tensor,  # [B]
    num_rows: Sequence[int],  # [B], rows of request i in a flattened tensor
    dtype: torch.dtype | None = None,
) -> torch.Tensor:  # [sum(num_rows)]
    """Repeat a per-request value once per row of that request (ragged → flattened rows)."""
    x = torch.as_tensor(values, dtype=dtype)
    return torch.repeat_interleave(x, torch.as_tensor(list(num_rows), dtype=torch.long))


def _top_k_top_p_sorted(
    logits: torch.Tensor,  # [N, V]
    inv_temperature: torch.Tensor | None,  # [N] or None (1)
    top_k: torch.Tensor | None,  # [N]
    top_p: torch.Tensor | None,  # [N]
) -> tuple[torch.Tensor, torch.Tensor]:  # kept scaled logits [N, W] (-inf: dropped), ids [N, W]
    """The sorted head of each row that top-k then top-p can keep, W = max top-k (or V)."""
    vocab = logits.shape[-1]
    k = torch.full((logits.shape[0],), vocab, dtype=torch.long, device=logits.device)
    if top_k is not None:
        k = top_k.to(device=logits.device, dtype=torch.long).clone()
        k[(k <= 0) | (k > vocab)] = vocab
    width = int(k.max()) if k.numel() else vocab
    kept, order = logits.topk(width, dim=-1, sorted=True)  # [N, W]; temperature keeps the order
    if inv_temperature is not None:
        kept = kept * inv_temperature[:, None]
    kth = kept.gather(1, (k - 1)[:, None])  # [N, 1] k-th largest; ties with it are kept (vLLM)
    kept = kept.masked_fill(kept < kth, float("-inf"))
    if top_p is not None:
        probs_sorted = kept.softmax(dim=-1)  # [N, W]
        mass_before = probs_sorted.cumsum(dim=-1) - probs_sorted  # [N, W]
        drop = mass_before >= top_p.to(device=logits.device, dtype=probs_sorted.dtype)[:, None]
        drop[:, 0] = False
        kept = kept.masked_fill(drop, float("-inf"))
    return kept, order


def logits_to_probs(
    logits: torch.Tensor,  # [N, V]
    temperature: torch.Tensor | float,  # [N] or scalar; 0: greedy (one-hot argmax)
    top_k: torch.Tensor | None = None,  # [N]
    top_p: torch.Tensor | None = None,  # [N]
) -> torch.Tensor:  # [N, V] float32, rows sum to 1
    """The processed sampling distribution: softmax(top_p(top_k(logits / T))).

    Rows with temperature 0 become a one-hot on the argmax of the raw logits (greedy). Use the
    same call, with the same per-request settings, for the target and for the draft model.
    """
    logits = finite_logits(logits.to(torch.float32))
    n = logits.shape[0]
    temp = torch.as_tensor(temperature, dtype=torch.float32).to(logits.device).expand(n)
    if bool((temp < 0).any()):
        raise ValueError("temperature must be >= 0")
    greedy = temp == 0  # [N]
    inv_temp = 1.0 / torch.where(greedy, torch.ones_like(temp), temp)  # [N]
    if top_k is None and top_p is None:
        probs = (logits * inv_temp[:, None]).softmax(dim=-1)  # [N, V]
    else:
        kept, order = _top_k_top_p_sorted(logits, inv_temp, top_k, top_p)  # [N, W]
        probs = torch.zeros_like(logits).scatter_(-1, order, kept.softmax(dim=-1))
    if bool(greedy.any()):
        one_hot = torch.zeros_like(probs)
        one_hot.scatter_(-1, logits.argmax(dim=-1, keepdim=True), 1.0)
        probs = torch.where(greedy[:, None], one_hot, probs)
    return probs


def sample_from_probs(
    probs: torch.Tensor,  # [N, V] weights, rows need not sum to 1
    generators: Sequence[torch.Generator | None] | None = None,  # [N]
) -> torch.Tensor:  # [N] int64
    """One categorical draw per row by inverse CDF: the first j with cdf_j > u * cdf_V.

    Exact for any non-negative weights; zero-weight tokens are never chosen (their cdf step is
    empty). Non-finite or negative weights count as 0 and a row without positive weight is
    uniform (`finite_weights`; never a token outside [0, V)). Row r draws its single uniform from
    `generators[r]` when given (seeded reproducibility), else from the global RNG. The CDF is
    accumulated in float64.
    """
    n = probs.shape[0]
    probs = finite_weights(probs)
    empty = ~(probs > 0).any(dim=-1, keepdim=True)  # [N, 1]
    if bool(empty.any()):
        probs = torch.where(empty, torch.ones_like(probs), probs)
    cdf = probs.to(torch.float64).cumsum(dim=-1)  # [N, V]
    uniform = torch.rand(n, dtype=torch.float64, device=probs.device)  # [N]
    if generators is not None:
        if len(generators) != n:
            raise ValueError(f"got {len(generators)} generators for {n} rows")
        for r, gen in enumerate(generators):
            if gen is not None:
                uniform[r] = torch.rand((), dtype=torch.float64, generator=gen,
                                        device=probs.device)
    target = (uniform * cdf[:, -1]).unsqueeze(-1)  # [N, 1]
    idx = torch.searchsorted(cdf, target, right=True).squeeze(-1)  # [N]
    # u * total can round up to total: clamp to the last token with positive weight.
    last_positive = probs.shape[1] - 1 - (probs > 0).flip(-1).to(torch.int8).argmax(dim=-1)
    return torch.minimum(idx, last_positive)
