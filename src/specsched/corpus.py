"""Prompts of exact lengths cut from offline real English text (no torch, no network).

Text: Python's own documentation (`pydoc_data.topics`, stdlib, offline). Tokenization belongs to
the caller: `build_prompts` cuts windows from any sequence of pieces — token ids from a tokenizer
(`corpus_token_ids`), or words as an approximation (`corpus_words`) — so one function serves the
engine profile, every bench backend and the demo. A model without a tokenizer (tiny random test
models) gets a deterministic stand-in: each word mapped to an id by CRC32 (repeated words repeat
ids, so the text keeps its structure).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")
RESERVED_IDS = 4  # stand-in ids avoid the lowest ids (BOS / EOS in the test models)


def length_range(n: int, ratio: float) -> tuple[int, int]:
    """The bounds of lengths drawn uniformly in n x (1 ± ratio), as vLLM's random dataset draws
    them: lo >= 1, hi >= lo (the bench workloads, the demo's prediction and profile prompts)."""
    lo = max(1, int(n * (1 - ratio)))
    return lo, max(lo, int(n * (1 + ratio)))


@dataclass(frozen=True, slots=True)
class RequestShape:
    """A request: `prefix_len` tokens shared with the requests of its `prefix_id`, then its own."""

    num_prompt_tokens: int
    output_len: int
    prefix_id: int = -1  # -1: no shared prefix
    prefix_len: int = 0
    repeat_unit: int = 0  # > 0: the prompt repeats a snippet of this many pieces (its own
    # window of the corpus) instead of running text: the continuation is likely repetitive too
    quote: bool = False  # the tail after the shared prefix quotes a window of that prefix, so
    # the continuation copies text from further back (long-range retrieval, not local text)
    document_unit: int = 0  # > 0: the shared prefix is a passage of this many pieces repeated
    # (a text the target has read several times: a quote of it keeps being copied)
    document_shuffle: bool = False  # the passage's pieces in a seeded random order: a quote of
    # it can be copied only from where it was read, not guessed from the text around it


def corpus_text() -> str:
    """~465 kB of English from the Python docs, whitespace-normalized (deterministic order)."""
    from pydoc_data.topics import topics

    return " ".join(" ".join(topics[key].split()) for key in sorted(topics))


def corpus_words() -> list[str]:
    """The corpus as words: the pieces of the word-level length approximation (~65k words)."""
    return corpus_text().split()


def corpus_token_ids(encode: Callable[[str], list[int]] | None, vocab_size: int) -> list[int]:
    """The corpus as token ids: `encode(text)`, or the CRC32 stand-in without a tokenizer."""
    text = corpus_text()
    if encode is not None:
        return encode(text)
    span = max(1, vocab_size - RESERVED_IDS)
    return [RESERVED_IDS + zlib.crc32(w.encode()) % span for w in text.split()]


def _window(pieces: Sequence[T], start: int, length: int) -> list[T]:
    """`length` pieces from `start`, wrapping around the corpus."""
    n = len(pieces)
    out: list[T] = []
    while len(out) < length:
        take = min(length - len(out), n - start)
        out.extend(pieces[start : start + take])
        start = 0
    return out


def build_prompts(shapes: Sequence[RequestShape], pieces: Sequence[T], seed: int) -> list[list[T]]:
    """One prompt (a list of pieces) per request, windows of the corpus at seeded offsets.

    Requests sharing a `prefix_id` get the same leading `prefix_len` pieces; suffixes and unshared
    prompts start at distinct offsets. `seed` varies the text (e.g. per replicate), not the lengths.
    """
    if not pieces:
        raise ValueError("build_prompts needs a non-empty corpus")
    rng = random.Random(f"{seed}/prompts")
    n = len(pieces)
    prefixes: dict[int, list[T]] = {}
    prompts: list[list[T]] = []
    for shape in shapes:
        head: list[T] = []
        if shape.prefix_id >= 0 and shape.prefix_len > 0:
            if shape.prefix_id not in prefixes:
                size = min(shape.document_unit or shape.prefix_len, shape.prefix_len)
                passage = _window(pieces, rng.randrange(n), size)
                if shape.document_shuffle:
                    rng.shuffle(passage)
                prefixes[shape.prefix_id] = _window(passage, 0, shape.prefix_len)
            head = prefixes[shape.prefix_id]
        length = shape.num_prompt_tokens - len(head)
        if shape.quote and head:
            # room for the quote and its continuation (output_len pieces) inside the prefix
            start = rng.randrange(max(1, len(head) - length - shape.output_len))
            tail = _window(head, start, length)
        elif shape.repeat_unit > 0:
            unit = _window(pieces, rng.randrange(n), min(shape.repeat_unit, length))
            tail = (unit * (length // len(unit) + 1))[:length]
        else:
            tail = _window(pieces, rng.randrange(n), length)
        prompts.append(head + tail)
    return prompts


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
