"""Low-precision drafts (issue 16): a bf16 or int8 draft changes proposals only, never greedy
output; the precision is resolved from the config and the CPU, reported, and the copy is built
once."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import pytest
import torch

from specsched.engine import LLM
from specsched.engine.layers import int8_linear, linear
from specsched.engine.layers.linear import draft_weight_dtype, native_bf16
from specsched.engine.spec.config import SpeculativeConfig
from specsched.errors import UserError
from specsched.policy import PolicyConfig

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
    return make_sharp_pair(tmp_path_factory.mktemp("sharp_bf16"), tiny_hf_factory)


@pytest.fixture(scope="module")
def reference(pair: tuple[Path, Path]) -> tuple[LLM, list[list[int]], list[list[int]]]:
    llm = LLM(str(pair[0]), **LLM_KW)
    prompts = mixed_prompts(5, seed=17)
    return llm, prompts, [o.token_ids for o in llm.generate(prompts, greedy(MAX_TOKENS))]


def int8_or_skip() -> None:
    if not int8_linear.available("cpu"):
        pytest.skip("native int8 kernel unavailable here (no C++ compiler?)")


@pytest.mark.parametrize("dtype", ["bfloat16", "int8"])
@pytest.mark.parametrize("kind", ["streaming", "model"])
@pytest.mark.parametrize("case", range(4))
def test_low_precision_draft_keeps_greedy_output(
    dtype: str, kind: str, case: int, pair: tuple[Path, Path], reference: Any
) -> None:
    if dtype == "int8":
        int8_or_skip()
    ref_llm, prompts, ref = reference
    rng = random.Random(77 * case + len(kind))
    policy = PolicyConfig(schedule=random_schedule(rng), per_request_k=case % 2 == 1)
    drafter = f"model:{pair[1]}" if kind == "model" else kind
    spec = SpeculativeConfig.from_flags(drafter, policy, draft_dtype=dtype,
                                        window=rng.choice([4, 8, 16]), num_sink_tokens=2)
    llm = LLM(str(pair[0]), speculative=spec, **LLM_KW)
    assert llm.engine.speculator.draft_dtype == dtype
    got = [o.token_ids for o in llm.generate(prompts, greedy(MAX_TOKENS))]
    assert_greedy_equal(ref_llm, prompts, ref, got)


def test_low_precision_streaming_drafts_accept_like_fp32(
    pair: tuple[Path, Path], reference: Any
) -> None:
    """Same drafts in the common case: acceptance within a few points of the fp32 draft."""
    int8_or_skip()
    ref_llm, prompts, ref = reference
    rates = {}
    for dtype in ("float32", "bfloat16", "int8"):
        spec = SpeculativeConfig.from_flags("streaming", PolicyConfig.constant(4),
                                            draft_dtype=dtype, window=16, num_sink_tokens=2)
        llm = LLM(str(pair[0]), speculative=spec, **LLM_KW)
        got = [o.token_ids for o in llm.generate(prompts, greedy(MAX_TOKENS))]
        assert_greedy_equal(ref_llm, prompts, ref, got)
        stats = llm.last_run_stats
        assert stats is not None and stats.spec.num_draft_tokens > 0
        rates[dtype] = stats.spec.num_accepted_tokens / stats.spec.num_draft_tokens
    assert rates["bfloat16"] > rates["float32"] - 0.15, rates
    assert rates["int8"] > rates["float32"] - 0.15, rates


def test_draft_dtype_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    f32, bf16, i8 = torch.float32, torch.bfloat16, torch.int8
    has_int8 = int8_linear.available("cpu")
    no_int8 = bf16 if native_bf16("cpu") else f32
    assert draft_weight_dtype("float32", f32, "cpu") == f32
    assert draft_weight_dtype("bfloat16", f32, "cpu") == bf16
    assert draft_weight_dtype("int8", f32, "cpu") == (i8 if has_int8 else no_int8)
    assert draft_weight_dtype("auto", f32, "cpu") == (i8 if has_int8 else no_int8)
    assert draft_weight_dtype("float32", bf16, "cpu") == bf16  # a 16-bit target: never up-cast
    assert draft_weight_dtype("auto", torch.float16, "cpu") == torch.float16
    assert draft_weight_dtype("int8", bf16, "cpu") == bf16
    # where the int8 kernel cannot build, auto falls back to the bf16 / fp32 rule
    monkeypatch.setattr(int8_linear, "available", lambda device: False)
    assert draft_weight_dtype("auto", f32, "cpu") == no_int8
    assert draft_weight_dtype("int8", f32, "cpu") == no_int8  # as auto without the kernel
    monkeypatch.setattr(linear, "native_bf16", lambda device: False)  # an AVX2-only CPU
    assert draft_weight_dtype("int8", f32, "cpu") == f32  # no kernel, no native bf16: fp32
    with pytest.raises(UserError, match="draft_dtype"):
        SpeculativeConfig(draft_dtype="int4")


def test_copy_is_built_once_shares_target_state_and_is_reported(pair: tuple[Path, Path]) -> None:
    spec = SpeculativeConfig.from_flags("streaming", PolicyConfig.constant(2),
                                        draft_dtype="bfloat16", window=8)
    llm = LLM(str(pair[0]), speculative=spec, **LLM_KW)
    eng = llm.engine
    first = eng.drafter
    assert first is not None and first.weight_dtype == torch.bfloat16
    draft = first.model  # type: ignore[attr-defined]
    assert draft is not eng.model and draft.embed is eng.model.embed  # embedding shared
    assert first.kv is eng.kv  # type: ignore[attr-defined]  # the target's fp32 KV cache
    assert eng.speculator.draft_extra_bytes == draft.weight_nbytes()
    assert draft.weight_nbytes() * 2 == eng.model.weight_nbytes()
    eng.set_speculative(dataclasses.replace(spec, policy=PolicyConfig.constant(3)))
    assert eng.drafter.model is draft  # type: ignore[union-attr]  # not rebuilt
    eng.set_speculative(dataclasses.replace(spec, draft_dtype="float32"))
    assert eng.speculator.draft_dtype == "float32" and eng.speculator.draft_extra_bytes == 0
    eng.set_speculative(dataclasses.replace(spec, drafter=spec.drafter.NGRAM))
    assert eng.speculator.draft_dtype == "none"


def test_int8_copy_is_built_once_and_its_memory_reported(pair: tuple[Path, Path]) -> None:
    int8_or_skip()
    spec = SpeculativeConfig.from_flags("streaming", PolicyConfig.constant(2),
                                        draft_dtype="int8", window=8)
    llm = LLM(str(pair[0]), speculative=spec, **LLM_KW)
    eng = llm.engine
    draft = eng.drafter.model  # type: ignore[union-attr]
    assert eng.speculator.draft_dtype == "int8" and draft.embed is eng.model.embed
    int8_bytes = eng.model.weight_nbytes() // 4  # + scales, + the bf16 copy where native
    wide = eng.model.weight_nbytes() // 2 if native_bf16("cpu") else 0  # else the target's own
    assert int8_bytes + wide < eng.speculator.draft_extra_bytes < 1.1 * (int8_bytes + wide)
    eng.set_speculative(dataclasses.replace(spec, policy=PolicyConfig.constant(3)))
    assert eng.drafter.model is draft  # type: ignore[union-attr]  # not rebuilt


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int8])
def test_low_precision_copy_logits_close_to_fp32(dtype: torch.dtype, pair: tuple[Path, Path]
                                                 ) -> None:
    from specsched.engine import KVCache, build_metadata

    if dtype == torch.int8:
        int8_or_skip()
    llm = LLM(str(pair[0]), **LLM_KW)
    model = llm.engine.model
    draft = model.with_weight_dtype(dtype)
    ids = torch.tensor(mixed_prompts(1, seed=5)[0])
    meta = build_metadata([0], [0], [len(ids)])
    outs = []
    for m in (model, draft):
        kv = KVCache(llm.engine.model_cfg, 1, 160, torch.float32, "cpu")
        outs.append(m(ids, meta, kv))  # [T, V] fp32 for both
    assert outs[1].dtype == torch.float32
    scale = outs[0].abs().max().item()
    assert (outs[0] - outs[1]).abs().max().item() < 0.05 * scale
