"""The caps every K passes before drafting: pure functions, the same for every policy.

1. A request still prefilling drafts nothing (it has no last sampled token to continue).
2. A request drafts at most `room` tokens: its K drafts + 1 recovered/bonus token must fit both
   `max_model_len` and the request's `max_tokens` (no draft is wasted past the end).
No torch here.
"""

from __future__ import annotations

from collections.abc import Sequence

from specsched.policy.batch import BatchState


def draft_room(max_model_len: int, num_tokens: int, max_tokens: int,
               num_output_tokens: int) -> int:
    """Most drafts whose K + 1 outputs fit: `num_tokens` = prompt + output tokens so far."""
    return min(max_model_len - num_tokens - 1, max_tokens - num_output_tokens - 1)


def capped(ks: Sequence[int], batch: BatchState) -> tuple[int, ...]:
    """[B] K per request after the prefill and room caps (never negative)."""
    computed, prompt, room = batch.num_computed_tokens, batch.num_prompt_tokens, batch.room
    out = [k if c >= p else 0 for k, c, p in zip(ks, computed, prompt, strict=True)]
    if room is not None:
        out = [min(k, r) for k, r in zip(out, room, strict=True)]
    return tuple(k if k > 0 else 0 for k in out)
