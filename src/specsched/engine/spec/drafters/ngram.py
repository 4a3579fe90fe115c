"""N-gram prompt-lookup drafter (vLLM `method="ngram"`): zero model cost.

Rule (as `vllm/v1/spec_decode/ngram_proposer.py::_find_longest_matched_ngram_and_propose_tokens`,
read at vLLM commit adce4e9a): over n in [prompt_lookup_min, prompt_lookup_max], take the longest
n for which the last n tokens occur earlier in the sequence, with at least one token after that
occurrence (occurrences may overlap the suffix itself); among occurrences of that n-gram take the
EARLIEST one (vLLM's KMP over the reversed tokens keeps the last match in reversed order, its
comment: "the earliest position in the original tokens"). Propose the up-to-k tokens that followed
it, truncated at the end of the sequence. No match: no drafts. K never reaches past
`max_model_len`: the policy's room cap (`specsched.policy.caps.draft_room`) bounds it first.

Prompt lookup: Saxena 2023, https://github.com/apoorvumang/prompt-lookup-decoding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from specsched.engine.spec.drafters.base import DraftBatch, Drafter, DraftProposal, TokenIds
from specsched.errors import UserError


@dataclass(frozen=True, slots=True)
class NgramConfig:
    """vLLM's `prompt_lookup_min` / `prompt_lookup_max` (n-gram lengths tried, inclusive)."""

    prompt_lookup_min: int = 1
    prompt_lookup_max: int = 4

    def __post_init__(self) -> None:
        if self.prompt_lookup_min < 1:
            raise UserError(f"prompt_lookup_min must be >= 1, got {self.prompt_lookup_min}")
        if self.prompt_lookup_max < self.prompt_lookup_min:
            raise UserError(
                f"prompt_lookup_max ({self.prompt_lookup_max}) must be >= prompt_lookup_min "
                f"({self.prompt_lookup_min})"
            )


def _earliest_match(tokens: np.ndarray, n: int) -> int:
    """Start of the earliest occurrence of tokens[-n:] ending before the last token, or -1."""
    total = tokens.shape[0]
    if total < n + 1:
        return -1
    suffix = tokens[total - n :]
    # Candidate starts j in [0, total - n - 1]: the window tokens[j : j + n] leaves >= 1 follower.
    cand = np.flatnonzero(tokens[: total - n] == suffix[0])
    for t in range(1, n):
        if cand.size == 0:
            break
        cand = cand[tokens[cand + t] == suffix[t]]
    return int(cand[0]) if cand.size else -1


def ngram_propose(
    tokens: TokenIds, k: int, prompt_lookup_min: int, prompt_lookup_max: int,
) -> np.ndarray:  # [<= k] int64
    """Prompt-lookup drafts for one sequence (see the module docstring for the exact rule).

    Cost O(T * n) numpy work per n tried in the worst case, O(T) typically (T = len(tokens)).
    """
    arr = np.asarray(tokens, dtype=np.int64)
    total = arr.shape[0]
    if k <= 0 or total < prompt_lookup_min:
        return np.empty(0, dtype=np.int64)
    for n in range(min(prompt_lookup_max, total - 1), prompt_lookup_min - 1, -1):
        start = _earliest_match(arr, n)
        if start >= 0:
            follow = start + n
            return arr[follow : follow + k].copy()
    return np.empty(0, dtype=np.int64)


class NgramDrafter(Drafter):
    """Stateless prompt-lookup drafter; never runs a model (`num_forward_calls` stays 0)."""

    def __init__(self, config: NgramConfig | None = None) -> None:
        super().__init__()
        self.config = config or NgramConfig()

    def _propose(self, batch: DraftBatch, num_spec_tokens: list[int]) -> DraftProposal:
        cfg = self.config
        drafts: list[np.ndarray] = []
        for tokens, k in zip(batch.token_ids, num_spec_tokens, strict=True):
            if k == 0:
                drafts.append(np.empty(0, dtype=np.int64))
                continue
            drafts.append(ngram_propose(tokens, k, cfg.prompt_lookup_min, cfg.prompt_lookup_max))
        flat = np.concatenate(drafts) if drafts else np.empty(0, dtype=np.int64)
        return DraftProposal(torch.from_numpy(flat), tuple(len(d) for d in drafts))
