"""Helpers for the randomized losslessness tests: the seeded tiny target and draft, random engine
configurations, and the teacher-forced greedy comparison that keeps comparing after a near-tie.

A case is one (prompt, configuration) comparison. Many cases share one engine: one `LLM` per
configuration, many prompts per `generate` call (batches up to 16), several calls.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specsched.engine import LLM, SamplingParams
from specsched.engine.spec.config import SpeculativeConfig
from specsched.policy import CtxAgg, PolicyConfig
from specsched.schedule import INF, Schedule, parse_schedule

from .spec_helpers import NEAR_TIE, top2_gap
from .test_greedy_golden import write_tiny_model

VOCAB = 128
MAX_TOKENS = 20  # longest output of a case; references are computed this long
MAX_MODEL_LEN = 128  # > longest prompt (64) + MAX_TOKENS: no case stops on the model length
DRAFTERS = ("streaming", "ngram", "model")


def tiny_pair(root: Path) -> tuple[Path, Path]:
    """Target (2 layers) and draft (1 layer) from torch's seeded RNG: the draft shares the
    target's embeddings, first layer and output layer, so its proposals are often right."""
    return write_tiny_model(root / "target", 2, 0), write_tiny_model(root / "draft", 1, 0)


def prompt_pool(n: int, seed: int) -> list[list[int]]:
    """Prompts of 1..64 tokens; a third repeat a short motif (n-gram lookup hits)."""
    rng = random.Random(seed)
    out: list[list[int]] = []
    for i in range(n):
        length = rng.choice([1, 2, 3, 5, 8, 13, 21, 30, 40, 47, 55, 64])
        if i % 3 == 1:
            motif = [rng.randrange(2, VOCAB) for _ in range(rng.randint(1, 5))]
            out.append((motif * length)[:length])
        else:
            out.append([rng.randrange(2, VOCAB) for _ in range(length)])
    return out


def random_schedule(rng: random.Random, max_k: int = 8) -> Schedule:
    """Static K, batch-only (3-item) or a 5-item grid; batch boundaries inside 1..16 (K changes
    as requests finish and the batch shrinks), context boundaries inside 2..90 (crossed while
    decoding)."""
    kind = rng.choice(["static", "batch", "grid", "grid"])
    if kind == "static":
        return Schedule.constant(rng.randint(0, max_k))
    cuts = sorted(rng.sample(range(2, 17), rng.randint(1, 3)))
    batch = list(zip([1, *cuts], [c - 1 for c in cuts] + [INF], strict=True))
    if kind == "batch":
        return parse_schedule([[lo, hi, rng.randint(0, max_k)] for lo, hi in batch])
    ctx_cuts = sorted(rng.sample(range(2, 90), rng.randint(1, 3)))
    ctx = list(zip([1, *ctx_cuts], [c - 1 for c in ctx_cuts] + [INF], strict=True))
    return parse_schedule([[b0, b1, c0, c1, rng.randint(0, max_k)] for b0, b1 in batch
                           for c0, c1 in ctx])


@dataclass(frozen=True)
class EngineCase:
    """One engine configuration: drafter, K policy and batching limits."""

    spec: SpeculativeConfig
    max_num_seqs: int
    max_num_batched_tokens: int

    def build(self, target: Path) -> LLM:
        return LLM(str(target), speculative=self.spec, max_num_seqs=self.max_num_seqs,
                   max_num_batched_tokens=self.max_num_batched_tokens,
                   max_model_len=MAX_MODEL_LEN, num_threads=1)


def random_engine_case(rng: random.Random, drafter: str, draft: Path) -> EngineCase:
    policy = PolicyConfig(schedule=random_schedule(rng), ctx_agg=rng.choice(list(CtxAgg)),
                          per_request_k=rng.random() < 0.5)
    lookup_min = rng.randint(1, 2)
    spec = SpeculativeConfig.from_flags(
        f"model:{draft}" if drafter == "model" else drafter, policy,
        window=rng.choice([2, 4, 8, 16]), num_sink_tokens=rng.choice([0, 1, 2, 4]),
        prompt_lookup_min=lookup_min, prompt_lookup_max=lookup_min + rng.randint(0, 3),
    )
    seqs = rng.choice([3, 8, 16, 16])
    return EngineCase(spec, seqs, rng.choice([seqs, 24, 48]))  # small budgets: chunked prefill


def greedy(max_tokens: int) -> SamplingParams:
    return SamplingParams(max_tokens=max_tokens, ignore_eos=True)


class TeacherForcedReference:
    """Plain greedy decoding (no speculation) of the target, compared token by token.

    At the first difference the target's top-2 logit gap (fresh one-sequence forward) must be
    a genuine fp32 near-tie (< NEAR_TIE); the reference is then forced onto the speculative
    run's token (its prompt extended by the spec output so far) and the comparison continues to
    the end of the output."""

    def __init__(self, target: Path, pool: list[list[int]]) -> None:
        self.llm = LLM(str(target), max_num_seqs=16, max_model_len=MAX_MODEL_LEN,
                       num_threads=1)
        outs = self.llm.generate(pool, greedy(MAX_TOKENS))
        self.ref = {tuple(p): o.token_ids for p, o in zip(pool, outs, strict=True)}
        self.near_ties = 0
        self.cases = 0

    def compare(self, prompt: list[int], got: list[int], what: str) -> None:
        self.cases += 1
        prefix, rest = list(prompt), list(got)
        expected = self.ref[tuple(prompt)][: len(rest)]
        while True:
            j = next((i for i, (a, b) in enumerate(zip(expected, rest, strict=False)) if a != b),
                     None)
            if j is None:
                assert len(expected) == len(rest), f"{what}: {expected} vs {rest}"
                return
            gap = top2_gap(self.llm, prefix + rest[:j])
            at = len(prefix) - len(prompt) + j
            assert gap < NEAR_TIE, (f"{what}: spec differs at output {at} (top-2 gap "
                                    f"{gap:.3g}): want {expected} got {rest}")
            self.near_ties += 1
            prefix, rest = prefix + rest[: j + 1], rest[j + 1:]
            if not rest:
                return
            expected = self.llm.generate([prefix], greedy(len(rest)))[0].token_ids


def run_cases(llm: LLM, ref: TeacherForcedReference, prompts: list[list[int]],
              rng: random.Random, what: str) -> dict[str, Any]:
    """One generate call: every prompt with its own random output length (1..MAX_TOKENS), so
    requests finish at different steps; each output compared with the reference."""
    lengths = [rng.randint(1, MAX_TOKENS) for _ in prompts]
    outs = llm.generate(prompts, [greedy(n) for n in lengths])
    for i, (p, o, n) in enumerate(zip(prompts, outs, lengths, strict=True)):
        assert len(o.token_ids) == n and o.finish_reason == "length", (what, i)
        ref.compare(p, o.token_ids, f"{what} prompt {i}")
    stats = llm.last_run_stats
    assert stats is not None
    return {"drafts": stats.spec.num_draft_tokens, "accepted": stats.spec.num_accepted_tokens,
            "k_values": sorted(stats.k_histogram)}
