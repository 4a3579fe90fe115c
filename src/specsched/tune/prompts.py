"""Prompts of exact token lengths from offline real text, for profiling and engine benchmarks.

Text: Python's documentation (`specsched.bench.workload.corpus_text`, `pydoc_data.topics`),
tokenized with the engine's own tokenizer so lengths are exact tokens. A model without a
tokenizer (tiny random test models) gets a deterministic stand-in: each word mapped to an id by
CRC32 (same text structure: repeated words repeat ids).
"""

from __future__ import annotations

import zlib
from typing import Any

from specsched.bench.workload import RequestShape, build_prompts, corpus_text

RESERVED_IDS = 4  # stand-in ids avoid the lowest ids (BOS / EOS in the test models)


def corpus_token_ids(llm: Any) -> list[int]:
    """The corpus as token ids of `llm` (an `specsched.engine.LLM`)."""
    text = corpus_text()
    if llm.tokenizer is not None:
        ids: list[int] = llm.tokenizer.encode(text)
        return ids
    vocab = int(llm.engine.model_cfg.vocab_size)
    span = max(1, vocab - RESERVED_IDS)
    return [RESERVED_IDS + zlib.crc32(w.encode()) % span for w in text.split()]


def shared_prefix_prompts(
    pieces: list[int], batch_size: int, ctx: int, suffix_len: int, seed: int
) -> list[list[int]]:
    """`batch_size` prompts of exactly `ctx` tokens: a shared prefix of `ctx - suffix_len` tokens
    (prefix caching makes it one prefill) and distinct `suffix_len`-token tails.

    The prefix starts at the same corpus offset for every `ctx` with the same `seed`
    (`build_prompts` draws it first), so a shorter context's prefix is a prefix of a longer one's.
    """
    suffix = min(suffix_len, ctx - 1)
    shapes = [RequestShape(ctx, 1, prefix_id=0, prefix_len=ctx - suffix)] * batch_size
    return build_prompts(shapes, pieces, seed)
