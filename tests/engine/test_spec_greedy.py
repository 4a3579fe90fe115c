"""Greedy speculative decoding is lossless: every drafter, randomized per-step-K schedules
(static, batch-only, 5-item with context boundaries crossed mid-generation, K up to 8), ragged
batches with chunked prefill, per-request K on and off — token for token equal to plain greedy."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from specsched.engine import LLM
from specsched.engine.spec.config import SpeculativeConfig
from specsched.policy import CtxAgg, PolicyConfig
from specsched.schedule import parse_schedule

from .spec_helpers import (
    assert_greedy_equal,
    greedy,
    make_sharp_pair,
    mixed_prompts,
    random_schedule,
)

MAX_TOKENS = 24
LLM_KW: dict[str, Any] = dict(
    max_model_len=160, max_num_seqs=3, max_num_batched_tokens=24, num_threads=1
)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory, tiny_hf_factory: Any) -> tuple[Path, Path]:
    return make_sharp_pair(tmp_path_factory.mktemp("sharp"), tiny_hf_factory)


@pytest.fixture(scope="module")
def reference(pair: tuple[Path, Path]) -> tuple[LLM, list[list[int]], list[list[int]]]:
    llm = LLM(str(pair[0]), **LLM_KW)
    prompts = mixed_prompts(5, seed=11)
    ref = [o.token_ids for o in llm.generate(prompts, greedy(MAX_TOKENS))]
    return llm, prompts, ref


def drafter_name(kind: str, pair: tuple[Path, Path]) -> str:
    return f"model:{pair[1]}" if kind == "model" else kind


@pytest.mark.parametrize("kind", ["streaming", "ngram", "model"])
@pytest.mark.parametrize("case", range(8))
def test_random_schedules_match_plain_greedy(
    kind: str, case: int, pair: tuple[Path, Path], reference: Any
) -> None:
    ref_llm, prompts, ref = reference
    rng = random.Random(1000 * case + len(kind))
    schedule = random_schedule(rng)
    window, sinks = rng.choice([4, 8, 16]), rng.choice([0, 2, 4])
    policy = PolicyConfig(schedule=schedule, ctx_agg=CtxAgg(rng.choice(["mean", "median", "max"])),
                          per_request_k=case % 2 == 1)
    spec = SpeculativeConfig.from_flags(drafter_name(kind, pair), policy, window=window,
                                        num_sink_tokens=sinks)
    llm = LLM(str(pair[0]), speculative=spec, **LLM_KW)
    outs = llm.generate(prompts, greedy(MAX_TOKENS))
    got = [o.token_ids for o in outs]
    gaps = assert_greedy_equal(ref_llm, prompts, ref, got)
    print(f"{kind} case {case}: {schedule.entries()} near-tie divergences: {gaps}")
    stats = llm.last_run_stats
    assert stats is not None
    assert stats.num_output_tokens == sum(len(g) for g in got)
    assert all(o.finish_reason == "length" and len(o.token_ids) == MAX_TOKENS for o in outs)
    if schedule.max_emitted_k == 0:
        assert stats.spec.num_draft_tokens == 0


@pytest.mark.parametrize("kind", ["streaming", "ngram", "model"])
def test_static_k8_accepts_and_matches(kind: str, pair: tuple[Path, Path], reference: Any) -> None:
    ref_llm, prompts, ref = reference
    spec = SpeculativeConfig.from_flags(drafter_name(kind, pair), PolicyConfig.constant(8),
                                        window=8, num_sink_tokens=2)
    llm = LLM(str(pair[0]), speculative=spec, **LLM_KW)
    outs = llm.generate(prompts, greedy(MAX_TOKENS))
    assert_greedy_equal(ref_llm, prompts, ref, [o.token_ids for o in outs])
    stats = llm.last_run_stats
    assert stats is not None and stats.spec.num_draft_tokens > 0
    assert stats.spec.num_accepted_tokens > 0  # the drafters are not useless on these prompts
    assert sum(o.stats.spec.num_draft_tokens for o in outs) == stats.spec.num_draft_tokens
    # K is capped so that no draft goes past max_tokens
    assert max(int(k) for k in stats.k_histogram) <= 8


def test_stop_token_inside_an_accepted_run(pair: tuple[Path, Path], reference: Any) -> None:
    _ref_llm, prompts, ref = reference
    stop = ref[1][5]  # the 6th greedy token of prompt 1
    spec = SpeculativeConfig.from_flags(f"model:{pair[1]}", PolicyConfig.constant(6))
    from specsched.engine import SamplingParams

    params = SamplingParams(max_tokens=MAX_TOKENS, stop_token_ids=(stop,), ignore_eos=True)
    out = LLM(str(pair[0]), speculative=spec, **LLM_KW).generate([prompts[1]], params)[0]
    assert out.token_ids == ref[1][: ref[1].index(stop) + 1]
    assert out.finish_reason == "stop"


def test_max_model_len_caps_k(pair: tuple[Path, Path]) -> None:
    prompt = mixed_prompts(4, seed=3)[2]
    kw = {**LLM_KW, "max_model_len": 40}
    ref = LLM(str(pair[0]), **kw).generate([prompt], greedy(64))[0]
    spec = SpeculativeConfig.from_flags("streaming", PolicyConfig.constant(8), window=8)
    got = LLM(str(pair[0]), speculative=spec, **kw).generate([prompt], greedy(64))[0]
    assert got.token_ids == ref.token_ids and len(got.token_ids) == 40 - len(prompt)
    assert got.finish_reason == ref.finish_reason == "length"


def test_k0_steps_run_no_drafter_forward(pair: tuple[Path, Path], reference: Any) -> None:
    """Batch size 1 routes K = 0: the drafter never runs; batch 2+ routes K = 3."""
    ref_llm, prompts, ref = reference
    schedule = parse_schedule([[1, 1, 0], [2, 8, 3]])
    for kind in ("streaming", "model"):
        policy = PolicyConfig(schedule=schedule)
        spec = SpeculativeConfig.from_flags(drafter_name(kind, pair), policy, window=8)
        llm = LLM(str(pair[0]), speculative=spec, **LLM_KW)
        drafter = llm.engine.drafter
        assert drafter is not None
        out = llm.generate([prompts[0]], greedy(MAX_TOKENS))[0]
        assert out.token_ids == ref[0]
        assert drafter.num_forward_calls == 0 and drafter.num_propose_calls == 0
        stats = llm.last_run_stats
        assert stats is not None and stats.k_histogram == {0: MAX_TOKENS - 1}
        assert stats.draft_s == 0.0
        # now a batch of 3: the step K is 3 while >= 2 requests run, the drafter catches up
        outs = llm.generate(prompts[:3], greedy(MAX_TOKENS))
        assert_greedy_equal(ref_llm, prompts[:3], ref[:3], [o.token_ids for o in outs])
        assert drafter.num_forward_calls > 0
        assert drafter.num_propose_calls == llm.last_run_stats.num_spec_steps  # type: ignore[union-attr]
