"""The drafter interface: `propose(batch, num_spec_tokens)` → ragged draft tokens (+ optional q).

Every drafter (ngram prompt lookup, StreamingLLM self-speculation, a small draft model) takes a
`DraftBatch` and a per-request number of speculative tokens K_i, and returns a `DraftProposal` in
the ragged layout `specsched.engine.spec.verify` consumes: flat draft ids `[sum n_i]` with
`num_draft_tokens` n_i <= K_i per request (a drafter may propose fewer, e.g. ngram without a match),
plus draft probabilities `[sum n_i, V]` when the drafter samples from a distribution q.

Contract of one decode step (vLLM vocabulary):

1. `propose(batch, num_spec_tokens)`; requests with K_i = 0 get no drafts and cost no drafter
   forward; a step where every K_i = 0 never reaches `_propose` (`num_propose_calls` unchanged).
2. The engine verifies, rolls back the target KV of rejected positions, and calls
   `on_verified(batch, num_accepted)` so a stateful drafter rolls its own state back in step
   (its valid length becomes num_computed_tokens_i + num_accepted_i + 1, as for the target).
3. `release(slot_id)` when a request finishes or is preempted.

A stateful drafter that was skipped at K_i = 0 catches up lazily on its next `propose` from
`token_ids` and `num_computed_tokens` (instead of paying a forward at K = 0 as vLLM's DSD does).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from specsched.engine.sampling.probs import sample_from_probs
from specsched.engine.sampling.sampler import SamplingParams, processed_probs

TokenIds = Sequence[int] | np.ndarray  # one request's tokens, int


@dataclass(frozen=True, slots=True)
class DraftBatch:
    """The running decode requests a drafter proposes for (struct of arrays, B entries each).

    token_ids[i]: every token of request i so far (prompt + output); the last one is the most
        recently sampled token, whose successor the drafts continue.
    slot_ids[i]: the request's KV-cache slot in the engine (stateful drafters key state by it).
    num_computed_tokens[i]: tokens already in the target KV cache, normally len(token_ids[i]) - 1.
    params[i] / generators[i]: the request's sampling settings and RNG; drafters that sample
        (streaming, model) draw x ~ q from the same processed distribution the target uses.
        None: every request is greedy.
    """

    token_ids: Sequence[TokenIds]
    slot_ids: Sequence[int]
    num_computed_tokens: Sequence[int]
    params: Sequence[SamplingParams] | None = None
    generators: Sequence[torch.Generator | None] | None = None

    def __post_init__(self) -> None:
        n = len(self.token_ids)
        if len(self.slot_ids) != n or len(self.num_computed_tokens) != n:
            raise ValueError(
                f"DraftBatch fields disagree on batch size: token_ids {n}, slot_ids "
                f"{len(self.slot_ids)}, num_computed_tokens {len(self.num_computed_tokens)}"
            )

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def all_greedy(self) -> bool:
        return self.params is None or all(p.greedy for p in self.params)


def draw_draft_tokens(
    logits: torch.Tensor,  # [n, V] draft logits of requests `rows` of the batch
    batch: DraftBatch,
    rows: Sequence[int],  # [n] request index of each logits row
) -> tuple[torch.Tensor, torch.Tensor | None]:  # tokens [n] int64, q [n, V] or None
    """x ~ q, q = the request's processed distribution of the draft logits (greedy: argmax).

    q is returned only when some request of the batch samples (all-greedy batches are verified
    with `verify_greedy`, which needs no probabilities).
    """
    if batch.all_greedy:
        return logits.argmax(dim=-1), None
    assert batch.params is not None
    params = [batch.params[r] for r in rows]
    gens = None if batch.generators is None else [batch.generators[r] for r in rows]
    q = processed_probs(logits, params)  # [n, V]
    return sample_from_probs(q, gens), q


@dataclass(frozen=True, slots=True)
class DraftProposal:
    """Ragged drafts: request i owns rows [cu_i - n_i, cu_i) of the flat tensors."""

    draft_token_ids: torch.Tensor  # [sum n_i] int64
    num_draft_tokens: tuple[int, ...]  # [B] n_i
    draft_probs: torch.Tensor | None = None  # [sum n_i, V] processed q, None for deterministic

    def __post_init__(self) -> None:
        if self.draft_token_ids.ndim != 1 or self.draft_token_ids.numel() != sum(
            self.num_draft_tokens
        ):
            raise ValueError("draft_token_ids must be 1-D with sum(num_draft_tokens) entries")
        if self.draft_probs is not None and self.draft_probs.shape[0] != sum(
            self.num_draft_tokens
        ):
            raise ValueError("draft_probs needs one row per draft token")

    @classmethod
    def from_lists(cls, drafts: Sequence[Sequence[int]]) -> DraftProposal:
        """Deterministic drafts given as one list of token ids per request."""
        flat = [int(t) for d in drafts for t in d]
        return cls(torch.tensor(flat, dtype=torch.long), tuple(len(d) for d in drafts))

    @classmethod
    def from_rows(
        cls,
        tokens: Sequence[Sequence[int]],  # [B] drafts per request
        probs: Sequence[Sequence[torch.Tensor]] | None,  # [B] per draft a [V] row, or None
    ) -> DraftProposal:
        """Assemble the ragged proposal from per-request lists (request order)."""
        prop = cls.from_lists(tokens)
        if probs is None or not any(len(p) for p in probs):
            return prop
        flat = torch.stack([row for per_req in probs for row in per_req])  # [sum n_i, V]
        return cls(prop.draft_token_ids, prop.num_draft_tokens, flat)

    @classmethod
    def empty(cls, batch_size: int) -> DraftProposal:
        return cls(torch.empty(0, dtype=torch.long), (0,) * batch_size)

    def to_lists(self) -> list[list[int]]:
        flat = self.draft_token_ids.tolist()
        out: list[list[int]] = []
        start = 0
        for n in self.num_draft_tokens:
            out.append(flat[start : start + n])
            start += n
        return out


def normalize_num_spec_tokens(num_spec_tokens: int | Sequence[int], batch_size: int) -> list[int]:
    """One K per request: an int applies to all; a sequence must have B entries >= 0."""
    ks = [int(num_spec_tokens)] * batch_size if isinstance(num_spec_tokens, int) else [
        int(k) for k in num_spec_tokens
    ]
    if len(ks) != batch_size:
        raise ValueError(f"num_spec_tokens has {len(ks)} entries for a batch of {batch_size}")
    if any(k < 0 for k in ks):
        raise ValueError(f"num_spec_tokens must be >= 0, got {ks}")
    return ks


class Drafter(ABC):
    """Base of all drafters. Subclasses implement `_propose`; counters are per instance."""

    def __init__(self) -> None:
        self.num_propose_calls = 0  # calls that reached `_propose` (some K_i > 0)
        self.num_forward_calls = 0  # draft-model forwards (subclasses bump via _count_forward)

    def propose(self, batch: DraftBatch, num_spec_tokens: int | Sequence[int]) -> DraftProposal:
        """Up to K_i draft tokens per request; K_i = 0 requests get none at no cost."""
        ks = normalize_num_spec_tokens(num_spec_tokens, len(batch))
        if not any(ks):
            return DraftProposal.empty(len(batch))
        self.num_propose_calls += 1
        proposal = self._propose(batch, ks)
        if len(proposal.num_draft_tokens) != len(batch) or any(
            n > k for n, k in zip(proposal.num_draft_tokens, ks, strict=True)
        ):
            raise RuntimeError(
                f"{type(self).__name__} proposed {proposal.num_draft_tokens} for K={ks}"
            )
        return proposal

    @abstractmethod
    def _propose(self, batch: DraftBatch, num_spec_tokens: list[int]) -> DraftProposal:
        """Propose n_i <= num_spec_tokens[i] tokens; must skip requests with K_i = 0."""

    @property
    def weight_dtype(self) -> torch.dtype | None:
        """The dtype of the weights the drafter runs (None: no model, e.g. n-gram lookup)."""
        return None

    @property
    def extra_weight_bytes(self) -> int:
        """Weight memory the drafter holds beyond the target's (0: shares the target's)."""
        return 0

    def on_verified(self, batch: DraftBatch, num_accepted: Sequence[int]) -> None:  # noqa: B027
        """Keep drafter state in step after verification (stateless drafters: nothing to do)."""

    def release(self, slot_id: int) -> None:  # noqa: B027
        """Forget state kept for a finished or preempted request's slot."""

    def _count_forward(self, n: int = 1) -> None:
        self.num_forward_calls += n
