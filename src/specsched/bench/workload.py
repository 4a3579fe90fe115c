"""Per-request prompt lengths of a scenario, and prompts cut from offline real English text.

Lengths depend only on the scenario and the experiment seed, so the dry-run and every backend see
the same shapes. Text: Python's own documentation (`pydoc_data.topics`, stdlib, offline).
Tokenization belongs to the backend: `build_prompts` cuts windows from any sequence of pieces
(token ids from a tokenizer, or words as an approximation) so one function serves every backend.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from specsched.bench.experiment import Scenario, ScenarioKind

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RequestShape:
    """A request: `prefix_len` tokens shared with the requests of its `prefix_id`, then its own."""

    num_prompt_tokens: int
    output_len: int
    prefix_id: int = -1  # -1: no shared prefix
    prefix_len: int = 0


def request_shapes(scenario: Scenario, seed: int) -> tuple[RequestShape, ...]:
    """Prompt/output lengths of every request, in submission order."""
    s = scenario
    if s.kind is ScenarioKind.BATCH:
        return tuple(RequestShape(p, s.output_len) for p in s.prompt_lens)
    if s.kind is ScenarioKind.PREFIX_REPETITION:
        total = s.prefix_len + s.suffix_len
        return tuple(
            RequestShape(total, s.output_len, prefix_id=i % s.num_prefixes, prefix_len=s.prefix_len)
            for i in range(s.num_requests)
        )
    # RANDOM: uniform integers in [input_len*(1-r), input_len*(1+r)], as vLLM's random dataset.
    rng = random.Random(f"{seed}/{s.name}/lengths")
    lo = max(1, int(s.input_len * (1 - s.range_ratio)))
    hi = max(lo, int(s.input_len * (1 + s.range_ratio)))
    return tuple(RequestShape(rng.randint(lo, hi), s.output_len) for _ in range(s.num_requests))


def corpus_text() -> str:
    """~465 kB of English from the Python docs, whitespace-normalized (deterministic order)."""
    from pydoc_data.topics import topics

    return " ".join(" ".join(topics[key].split()) for key in sorted(topics))


def corpus_words() -> list[str]:
    """The corpus as words: the pieces of the word-level length approximation (~65k words)."""
    return corpus_text().split()


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
                prefixes[shape.prefix_id] = _window(pieces, rng.randrange(n), shape.prefix_len)
            head = prefixes[shape.prefix_id]
        tail = _window(pieces, rng.randrange(n), shape.num_prompt_tokens - len(head))
        prompts.append(head + tail)
    return prompts
