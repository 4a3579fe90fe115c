"""Speculative-decoding verification: greedy and lossless rejection sampling, batched and ragged.

Terms (vLLM's, `vllm/v1/sample/rejection_sampler.py`), per request i with K_i draft tokens:

* accepted tokens: the leading draft tokens the target agrees with. Greedy: draft == target
  argmax. Sampling: draft x ~ q accepted with probability min(1, p(x) / q(x)).
* recovered token: at the first rejected position, a token sampled from the target instead —
  greedy: the target argmax; sampling: a draw from norm(max(0, p - q)) at that position.
* bonus token: when all K_i drafts are accepted, one more token from the target at position K_i
  (greedy: argmax; sampling: a draw from p). A request with K_i = 0 gets just the bonus token,
  which is ordinary decoding.
* output tokens = accepted + (recovered or bonus): always 1 <= n_i <= K_i + 1.

Each output token of `verify_sampling` is distributed exactly as plain sampling from the target p
(Leviathan et al. 2023, "Fast Inference from Transformers via Speculative Decoding",
arXiv:2211.17192, Theorem 1; Chen et al. 2023, "Accelerating Large Language Model Decoding with
Speculative Sampling", arXiv:2302.01318). p and q must be the *processed* distributions (same
temperature / top-k / top-p per request, see `specsched.engine.sampling.probs`).

Non-finite input never crashes verification or yields a token outside [0, V): greedy takes the
argmax with NaN as -inf (`finite_logits`); in sampling, NaN / inf / negative probabilities count
as 0 and a distribution left without mass is uniform (`finite_weights`, `sample_from_probs`).

Drafters without probabilities (n-gram prompt lookup) pass `draft_probs=None`: q is taken as a
one-hot on the draft token, so x is accepted with probability p(x) and the recovered token is
drawn from p with x removed, norm(max(0, p - onehot(x))). This is what vLLM does for `ngram`, and
it is lossless for any deterministic drafter.

Ragged layout (vLLM's `num_draft_tokens` / `cu_num_draft_tokens`): draft tokens of all requests
are flattened, `[sum K_i]`; target rows hold K_i + 1 consecutive rows per request (one per draft
position, then the bonus position), `[sum K_i + B, V]` — exactly the logits of a verify forward
whose query for request i is [last token, d_1, ..., d_K_i].

KV bookkeeping: that forward wrote K_i + 1 positions starting at num_computed_tokens_i; the first
num_accepted_i + 1 (last token + accepted drafts) stay valid, the other K_i - num_accepted_i are
rolled back: num_computed_tokens_i becomes num_computed_tokens_i + num_accepted_i + 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from specsched.engine.sampling.probs import finite_logits, finite_weights, sample_from_probs

PLACEHOLDER_TOKEN_ID = -1  # pads VerifyResult.output_token_ids past each request's output


@dataclass(frozen=True, slots=True)
class VerifyResult:
    """Outcome of one verify step for B requests (tensors on the target's device)."""

    num_draft_tokens: tuple[int, ...]  # [B] K_i as proposed
    num_accepted: torch.Tensor  # [B] int64, 0 <= a_i <= K_i
    output_token_ids: torch.Tensor  # [B, max K_i + 1] int64, row i valid up to a_i + 1
    is_bonus: torch.Tensor  # [B] bool: last output token is a bonus (a_i == K_i), else recovered

    @property
    def num_output_tokens(self) -> torch.Tensor:  # [B] int64
        return self.num_accepted + 1

    def to_lists(self) -> list[list[int]]:
        """Output token ids per request (accepted drafts, then the recovered or bonus token)."""
        rows = self.output_token_ids.tolist()
        return [row[: n] for row, n in zip(rows, self.num_output_tokens.tolist(), strict=True)]


@dataclass(frozen=True, slots=True)
class _Layout:
    """Padded views of the ragged layout (indices clamped so gathers stay in range)."""

    num_draft: torch.Tensor  # [B] int64
    draft_index: torch.Tensor  # [B, Kmax] rows of the flat draft tensors
    draft_valid: torch.Tensor  # [B, Kmax] bool, position < K_i
    target_index: torch.Tensor  # [B, Kmax + 1] rows of the flat target tensor


def _layout(
    num_draft_tokens: Sequence[int], num_draft_rows: int, num_target_rows: int,
    device: torch.device,
) -> _Layout:
    ks = [int(k) for k in num_draft_tokens]
    if any(k < 0 for k in ks):
        raise ValueError(f"num_draft_tokens must be >= 0, got {ks}")
    batch, total = len(ks), sum(ks)
    if total != num_draft_rows:
        raise ValueError(f"sum(num_draft_tokens)={total} but {num_draft_rows} draft rows given")
    if num_target_rows != total + batch:
        raise ValueError(
            f"target needs sum(K_i) + B = {total + batch} rows (K_i + 1 per request), "
            f"got {num_target_rows}"
        )
    k = torch.tensor(ks, dtype=torch.long, device=device)  # [B]
    draft_start = torch.cumsum(k, 0) - k  # [B]
    target_start = draft_start + torch.arange(batch, device=device)  # [B]
    kmax = max(ks, default=0)
    pos = torch.arange(kmax + 1, device=device)  # [Kmax + 1]
    draft_valid = pos[None, :kmax] < k[:, None]  # [B, Kmax]
    draft_index = (draft_start[:, None] + pos[None, :kmax]).clamp(max=max(total - 1, 0))
    target_index = target_start[:, None] + torch.minimum(pos[None, :], k[:, None])
    return _Layout(k, draft_index, draft_valid, target_index)


def _finish(
    lay: _Layout,
    draft: torch.Tensor,  # [B, Kmax] padded draft ids
    num_accepted: torch.Tensor,  # [B]
    final_token: torch.Tensor,  # [B] recovered or bonus token
    num_draft_tokens: Sequence[int],
) -> VerifyResult:
    batch, kmax = draft.shape
    pos = torch.arange(kmax + 1, device=draft.device)  # [Kmax + 1]
    grid = torch.cat([draft, draft.new_full((batch, 1), PLACEHOLDER_TOKEN_ID)], dim=1)
    grid = grid.scatter(1, num_accepted[:, None], final_token[:, None].to(grid.dtype))
    out = torch.where(pos[None, :] <= num_accepted[:, None], grid, PLACEHOLDER_TOKEN_ID)
    return VerifyResult(
        num_draft_tokens=tuple(int(k) for k in num_draft_tokens),
        num_accepted=num_accepted,
        output_token_ids=out,
        is_bonus=num_accepted == lay.num_draft,
    )


def verify_greedy(
    draft_token_ids: torch.Tensor,  # [sum K_i] int
    num_draft_tokens: Sequence[int],  # [B]
    target_logits: torch.Tensor,  # [sum K_i + B, V] (logits or probs: only the argmax is used)
) -> VerifyResult:
    """Greedy verification: accept while draft == target argmax; then recovered or bonus argmax."""
    lay = _layout(num_draft_tokens, draft_token_ids.numel(), target_logits.shape[0],
                  target_logits.device)
    # NaN counts as -inf, +inf rows pick their first +inf token: never a token outside [0, V)
    target_argmax = finite_logits(target_logits).argmax(dim=-1)[lay.target_index]  # [B, Kmax+1]
    draft = draft_token_ids.to(torch.long)[lay.draft_index]  # [B, Kmax]
    match = (draft == target_argmax[:, :-1]) & lay.draft_valid  # [B, Kmax]
    num_accepted = match.long().cumprod(dim=1).sum(dim=1)  # [B]
    final = target_argmax.gather(1, num_accepted[:, None]).squeeze(1)  # [B]
    return _finish(lay, draft, num_accepted, final, num_draft_tokens)


def verify_sampling(
    draft_token_ids: torch.Tensor,  # [sum K_i] int, x_j ~ q_j
    num_draft_tokens: Sequence[int],  # [B]
    draft_probs: torch.Tensor | None,  # [sum K_i, V] processed q, or None (one-hot q)
    target_probs: torch.Tensor,  # [sum K_i + B, V] processed p
    generators: Sequence[torch.Generator | None] | None = None,  # [B]
) -> VerifyResult:
    """Lossless rejection sampling (Leviathan et al. 2023; Chen et al. 2023).

    Per request, position j accepts x_j when u_j * q_j(x_j) < p_j(x_j), u_j ~ U[0, 1) — i.e.
    with probability min(1, p/q) — and q_j(x_j) > 0. The first rejection at j draws the recovered
    token from norm(max(0, p_j - q_j)); if all K_i are accepted the bonus token is drawn from
    p_{K_i}. Only one of {recovered, bonus} is ever emitted, so one draw per request suffices.
    With `generators[i]` set, request i draws its K_i acceptance uniforms and then one more
    uniform (inverse-CDF sample) from that generator: reproducible whatever else is in the batch.
    """
    device = target_probs.device
    lay = _layout(num_draft_tokens, draft_token_ids.numel(), target_probs.shape[0], device)
    batch, kmax = lay.draft_index.shape
    if generators is not None and len(generators) != batch:
        raise ValueError(f"got {len(generators)} generators for {batch} requests")
    if draft_probs is not None and draft_probs.shape != (draft_token_ids.numel(),
                                                         target_probs.shape[1]):
        raise ValueError(f"draft_probs shape {tuple(draft_probs.shape)} does not match "
                         f"[{draft_token_ids.numel()}, {target_probs.shape[1]}]")

    target_probs = finite_weights(target_probs)  # NaN / inf / negative weights count as 0
    if draft_probs is not None:
        draft_probs = finite_weights(draft_probs)

    uniform = torch.rand((batch, kmax), device=device)  # [B, Kmax]
    for i, gen in enumerate(generators or ()):
        k_i = int(num_draft_tokens[i])
        if gen is not None and k_i > 0:
            uniform[i, :k_i] = torch.rand(k_i, generator=gen, device=device)

    draft = draft_token_ids.to(torch.long)[lay.draft_index]  # [B, Kmax]
    p_x = target_probs[lay.target_index[:, :kmax], draft]  # [B, Kmax]
    if draft_probs is None:
        q_x = torch.ones_like(p_x)
    else:
        q_x = draft_probs[lay.draft_index, draft].to(p_x.dtype)  # [B, Kmax]
    accept = (q_x > 0) & (uniform * q_x < p_x) & lay.draft_valid  # [B, Kmax]
    num_accepted = accept.long().cumprod(dim=1).sum(dim=1)  # [B]

    # One distribution per request: the recovered residual at the first rejection, else p bonus.
    target_row = lay.target_index.gather(1, num_accepted[:, None]).squeeze(1)  # [B]
    final_dist = target_probs[target_row].to(torch.float32)  # [B, V]
    rejected = num_accepted < lay.num_draft  # [B]
    if bool(rejected.any()):
        at = num_accepted.clamp(max=kmax - 1)[:, None]  # [B, 1]
        if draft_probs is None:
            q_at = torch.zeros_like(final_dist).scatter_(1, draft.gather(1, at), 1.0)
        else:
            q_at = draft_probs[lay.draft_index.gather(1, at).squeeze(1)].to(torch.float32)
        residual = (final_dist - q_at).clamp_min(0.0)  # [B, V]
        # All-zero residual means p <= q everywhere, i.e. p == q, where rejection has probability
        # 0; it can only arise from rounding, and p is then the right distribution.
        residual = torch.where(residual.sum(1, keepdim=True) > 0, residual, final_dist)
        final_dist = torch.where(rejected[:, None], residual, final_dist)
    final = sample_from_probs(final_dist, generators)  # [B]
    return _finish(lay, draft, num_accepted, final, num_draft_tokens)
