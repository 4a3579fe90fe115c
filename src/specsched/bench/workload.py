"""Per-request prompt lengths of a scenario (`request_shapes`).

Lengths depend only on the scenario and the experiment seed, so the dry-run and every backend see
the same shapes; the text is cut by `specsched.corpus.build_prompts`.
"""

from __future__ import annotations

import random

from specsched.bench.experiment import Scenario, ScenarioKind
from specsched.corpus import RequestShape, length_range


def prompt_len_range(scenario: Scenario) -> tuple[int, int] | None:
    """The bounds of the prompt lengths `request_shapes` draws uniformly (RANDOM and PHASES, or
    PREFIX_REPETITION with a range_ratio: prefix + suffix bounds); None for fixed lengths."""
    s = scenario
    if s.kind in (ScenarioKind.RANDOM, ScenarioKind.PHASES):
        return length_range(s.input_len, s.range_ratio)
    if s.kind is ScenarioKind.PREFIX_REPETITION and s.range_ratio:
        lo, hi = length_range(s.suffix_len, s.range_ratio)
        return s.prefix_len + lo, s.prefix_len + hi
    return None


def request_shapes(scenario: Scenario, seed: int) -> tuple[RequestShape, ...]:
    """Prompt/output lengths of every request, in submission order."""
    s = scenario
    if s.kind is ScenarioKind.BATCH:
        return tuple(RequestShape(p, s.output_len) for p in s.prompt_lens)
    if s.kind is ScenarioKind.PREFIX_REPETITION:
        # range_ratio > 0: suffix lengths uniform in suffix_len x (1 ± r), drawn with the seed
        srng = random.Random(f"{seed}/{s.name}/suffixes")
        lo, hi = length_range(s.suffix_len, s.range_ratio)
        return tuple(
            RequestShape(s.prefix_len + (srng.randint(lo, hi) if s.range_ratio else s.suffix_len),
                         s.output_len, prefix_id=i % s.num_prefixes, prefix_len=s.prefix_len)
            for i in range(s.num_requests)
        )
    # RANDOM: uniform integers in [input_len*(1-r), input_len*(1+r)], as vLLM's random dataset.
    rng = random.Random(f"{seed}/{s.name}/lengths")
    lo, hi = length_range(s.input_len, s.range_ratio)
    if s.kind is ScenarioKind.PHASES:
        # even phases repeat: a snippet, or with a shared document (prefix_len > 0) a quote of
        # it; odd phases are free text (after the document, if any)
        def repeats(i: int) -> bool:
            return (i // s.phase_len) % 2 == 0
        if s.prefix_len > 0:
            return tuple(
                RequestShape(rng.randint(lo, hi), s.output_len, prefix_id=0,
                             prefix_len=s.prefix_len, quote=repeats(i),
                             document_unit=s.document_unit,
                             document_shuffle=s.document_shuffle)
                for i in range(s.num_requests))
        return tuple(
            RequestShape(rng.randint(lo, hi), s.output_len,
                         repeat_unit=s.repeat_unit if repeats(i) else 0)
            for i in range(s.num_requests))
    return tuple(RequestShape(rng.randint(lo, hi), s.output_len) for _ in range(s.num_requests))
