"""Prompts for measuring acceptance per request: distinct texts of `ctx` tokens (on average).

Timing points share one prefix (cheap to prefill, and step time does not depend on the words);
acceptance does depend on the words, so each acceptance request gets its own window of text at a
seeded offset: the offline corpus (`specsched.corpus`), or the user's own text
(`--prompts-file`): acceptance measured on the traffic the schedule will serve. A user text
shorter than the context fills the head of the prompt with corpus text and keeps its own text at
the tail, where the drafter's window and the continuation read (never repeating the user's text,
which would inflate acceptance).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Sequence

from specsched.corpus import RESERVED_IDS, RequestShape, build_prompts, length_range
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


def tail_lengths(shared_tail: int, tail_range: float, num: int, seed: int) -> list[int]:
    """Each prompt's own tail: `shared_tail` tokens, or with `tail_range` r > 0 uniform integers
    in [shared_tail (1 - r), shared_tail (1 + r)] drawn with `seed` (a serving workload's
    requests: a shared document and questions of varying length, as `bench.workload` draws)."""
    if tail_range <= 0:
        return [shared_tail] * num
    rng = random.Random(f"{seed}/acceptance-tails")
    lo, hi = length_range(shared_tail, tail_range)
    return [rng.randint(lo, hi) for _ in range(num)]


def acceptance_prompts(corpus: Sequence[int], user: Sequence[int] | None, num: int, ctx: int,
                       seed: int, shared_tail: int = 0, documents: int = 1,
                       tail_range: float = 0.0) -> list[list[int]]:
    """`num` prompts of `ctx` tokens (exactly, unless `tail_range`), each from its own offset
    (see module doc).
    `shared_tail` > 0 (corpus text only): the prompts come from `documents` documents (adjacent
    prompts share one) of `ctx - shared_tail` tokens, each prompt with its own tail of
    `shared_tail` tokens — `documents` long prefills instead of `num` (the demo's budget; one
    document's acceptance is not the traffic's, so more than one); `tail_range` r > 0: tails of
    shared_tail x (1 ± r) tokens (`tail_lengths`; prompts then average `ctx` tokens), the shape
    of a serving workload whose acceptance the profile stands for."""
    if user is None:
        if 0 < shared_tail < ctx:
            docs = max(1, min(documents, num))
            head = ctx - shared_tail
            shapes = [RequestShape(head + tail, 1, prefix_id=i * docs // num, prefix_len=head)
                      for i, tail in enumerate(tail_lengths(shared_tail, tail_range, num, seed))]
            return build_prompts(shapes, list(corpus), seed)
        return build_prompts([RequestShape(ctx, 1)] * num, list(corpus), seed)
    tail = min(len(user), ctx)
    tails = build_prompts([RequestShape(tail, 1)] * num, list(user), seed)
    if tail == ctx:
        return tails
    heads = build_prompts([RequestShape(ctx - tail, 1)] * num, list(corpus), seed)
    return [h + t for h, t in zip(heads, tails, strict=True)]
