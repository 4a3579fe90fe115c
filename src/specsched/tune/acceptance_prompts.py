"""Prompts for measuring acceptance per request: distinct texts of exactly `ctx` tokens.

Timing points share one prefix (cheap to prefill, and step time does not depend on the words);
acceptance does depend on the words, so each acceptance request gets its own window of text at a
seeded offset: the offline corpus (`specsched.corpus`), or the user's own text
(`--prompts-file`): acceptance measured on the traffic the schedule will serve. A user text
shorter than the context fills the head of the prompt with corpus text and keeps its own text at
the tail, where the drafter's window and the continuation read (never repeating the user's text,
which would inflate acceptance).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence

from specsched.corpus import RESERVED_IDS, RequestShape, build_prompts
from specsched.errors import UserError
from specsched.io import read_user_text

MIN_USER_TOKENS = 16


def text_token_ids(text: str, encode: Callable[[str], list[int]] | None,
                   vocab_size: int) -> list[int]:
    """`encode(text)`, or the corpus's CRC32 word stand-in for a model without a tokenizer."""
    if encode is not None:
        return encode(text)
    span = max(1, vocab_size - RESERVED_IDS)
    return [RESERVED_IDS + zlib.crc32(w.encode()) % span for w in text.split()]


def load_prompt_tokens(path: str, encode: Callable[[str], list[int]] | None,
                       vocab_size: int) -> list[int]:
    """The user's prompts file as token ids (UTF-8 text; at least MIN_USER_TOKENS tokens)."""
    ids = text_token_ids(read_user_text(path, "prompts"), encode, vocab_size)
    if len(ids) < MIN_USER_TOKENS:
        raise UserError(f"{path}: {len(ids)} tokens of text; the prompts file needs at least "
                        f"{MIN_USER_TOKENS} (acceptance is measured on its continuations)")
    return ids


def acceptance_prompts(corpus: Sequence[int], user: Sequence[int] | None, num: int, ctx: int,
                       seed: int, shared_tail: int = 0, documents: int = 1) -> list[list[int]]:
    """`num` prompts of exactly `ctx` tokens, each from its own offset (see module doc).
    `shared_tail` > 0 (corpus text only): the prompts come from `documents` documents (adjacent
    prompts share one) and differ in their last `shared_tail` tokens — `documents` long
    prefills instead of `num` (the demo's budget; one document's acceptance is not the
    traffic's, so more than one)."""
    if user is None:
        if 0 < shared_tail < ctx:
            docs = max(1, min(documents, num))
            shapes = [RequestShape(ctx, 1, prefix_id=i * docs // num, prefix_len=ctx - shared_tail)
                      for i in range(num)]
            return build_prompts(shapes, list(corpus), seed)
        return build_prompts([RequestShape(ctx, 1)] * num, list(corpus), seed)
    tail = min(len(user), ctx)
    tails = build_prompts([RequestShape(tail, 1)] * num, list(user), seed)
    if tail == ctx:
        return tails
    heads = build_prompts([RequestShape(ctx - tail, 1)] * num, list(corpus), seed)
    return [h + t for h, t in zip(heads, tails, strict=True)]
