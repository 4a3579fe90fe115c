"""Drafters for speculative decoding: one interface, `Drafter.propose(batch, num_spec_tokens)`."""

from __future__ import annotations

from specsched.engine.spec.drafters.base import (
    DraftBatch,
    Drafter,
    DraftProposal,
    normalize_num_spec_tokens,
)
from specsched.engine.spec.drafters.ngram import NgramConfig, NgramDrafter, ngram_propose

__all__ = [
    "DraftBatch",
    "DraftProposal",
    "Drafter",
    "NgramConfig",
    "NgramDrafter",
    "ngram_propose",
    "normalize_num_spec_tokens",
]
