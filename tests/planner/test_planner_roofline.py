"""Roofline figures against hand arithmetic: Llama-3.1-8B on an H100 SXM at 100% efficiency."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specsched.errors import UserError
from specsched.planner import (
    CostModel,
    DraftKind,
    DraftSpec,
    ProfileGrid,
    forward_time_ms,
    resolve_hardware,
    resolve_model,
    roofline_profile,
)
from specsched.planner.roofline import HardwareSpec, ModelSpec, draft_time_ms, verify_time_ms

# Hand arithmetic, Llama-3.1-8B (32 layers, d 4096, ffn 14336, 32 heads, 8 kv heads, hd 128):
#   attention per layer: 4096*4096*2 (q, o) + 4096*1024*2 (k, v)      =    41,943,040
#   MLP per layer:       3 * 4096 * 14336                             =   176,160,768
#   32 layers:           32 * 218,103,808                             = 6,979,321,856
#   LM head:             128256 * 4096                                =   525,336,576
#   matmul params                                                     = 7,504,658,432
#   + input embedding (untied)                                        = 8,029,995,008 params
#   weight bytes (bf16): 15,009,316,864 B; KV per token: 2*32*8*128*2 = 131,072 B
MATMUL = 7_504_658_432
IDEAL_H100 = HardwareSpec("H100 ideal", 3350, 989, 80, 1.0, 1.0, 0.0)


def num_params(m: ModelSpec) -> int:
    """Every parameter: the matmul ones + the input embedding when it is not tied."""
    return m.matmul_params + (0 if m.tie_word_embeddings else m.vocab_size * m.hidden_size)


def test_llama_8b_shape() -> None:
    m = resolve_model("Llama-3.1-8B")
    assert m.matmul_params == MATMUL
    assert num_params(m) == 8_029_995_008
    assert m.kv_bytes_per_token == 131_072


def test_decode_step_memory_bound() -> None:
    m = resolve_model("llama-3.1-8b")
    # B=1, ctx 8192, q=1: weights 15,009,316,864 / 3.35e12 s = 4.480393 ms,
    # KV 8192 * 131,072 = 1,073,741,824 B / 3.35e12 = 0.320520 ms; FLOPs are far below the roof.
    assert forward_time_ms(IDEAL_H100, m, 1, 1, 8192) == pytest.approx(
        4.480393 + 0.320520, rel=1e-5
    )


def test_linear_layers_turn_compute_bound_at_large_batch() -> None:
    m = resolve_model("llama-3.1-8b")
    # B=512, q=1, ctx=1: linear FLOPs 2 * 7,504,658,432 * 512 = 7.68477e12 / 989e12 = 7.770248 ms
    # (> 4.48 ms of weight reads); attention: KV 512 * 131,072 B / 3.35e12 = 0.020033 ms.
    assert forward_time_ms(IDEAL_H100, m, 512, 1, 1) == pytest.approx(7.770248 + 0.020033, rel=1e-5)


def test_verify_and_streaming_draft() -> None:
    m = resolve_model("llama-3.1-8b")
    # verify K=3 at B=64, ctx 32768: q=4 -> linear FLOPs 2*MATMUL*256 = 3.8424e12/989e12 = 3.885124
    # ms < 4.480393 ms weights -> 4.480393; KV 64*32768*131072 = 274,877,906,944 B = 82.053106 ms.
    assert verify_time_ms(IDEAL_H100, m, 64, 32768, 3) == pytest.approx(
        4.480393 + 82.053106, rel=1e-5
    )
    # StreamingLLM draft, window 512: 3 x (4.480393 + 64*512*131072/3.35e12 = 1.282080) ms
    draft = DraftSpec(DraftKind.STREAMING, window=512)
    assert draft_time_ms(IDEAL_H100, m, draft, 64, 32768, 3) == pytest.approx(
        3 * (4.480393 + 1.282080), rel=1e-5
    )
    assert draft_time_ms(IDEAL_H100, m, draft, 64, 32768, 0) == 0.0


def test_separate_draft_model() -> None:
    target, small = resolve_model("llama-3.1-8b"), resolve_model("smollm2-135m")
    # SmolLM2-135M: layer 576*576*2 + 576*192*2 + 3*576*1536 = 3,538,944; x30 = 106,168,320;
    # + tied LM head 49152*576 = 28,311,552 -> 134,479,872 matmul params (= all params, tied).
    assert small.matmul_params == num_params(small) == 134_479_872
    d = DraftSpec(DraftKind.MODEL, model=small)
    expected = 2 * (forward_time_ms(IDEAL_H100, small, 4, 1, 1000))
    assert draft_time_ms(IDEAL_H100, target, d, 4, 1000, 2) == pytest.approx(expected)


def test_roofline_profile_plans_more_k_at_long_context_and_big_batch() -> None:
    grid = ProfileGrid((1, 64), (1024, 65536), (0, 1, 2, 4, 8))
    p = roofline_profile(
        resolve_hardware("H100-SXM"), resolve_model("llama-3.1-8b"), DraftSpec(), grid, (0.8,)
    )
    p.require_plannable()
    cm = CostModel.from_profile(p)
    g_small = [cm.goodput(1, 1024, k).value for k in grid.ks]
    g_big = [cm.goodput(64, 65536, k).value for k in grid.ks]
    assert max(range(5), key=g_small.__getitem__) == 0  # MagicDec: no gain at B=1, short ctx
    assert max(range(5), key=g_big.__getitem__) >= 3  # large gain at large B x long ctx


def test_presets_and_custom_specs(tmp_path: Path) -> None:
    for name in ("H100-SXM", "h200", "A100-80GB", "l40s", "H100"):
        assert resolve_hardware(name).mem_bandwidth_gbps > 0
    for name in ("llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "smollm2-135m"):
        assert num_params(resolve_model(name)) > 1e8
    assert 69e9 < num_params(resolve_model("llama-3.1-70b")) < 71.5e9
    assert 7.0e9 < num_params(resolve_model("qwen2.5-7b")) < 7.7e9
    hw = tmp_path / "mi300x.json"
    hw.write_text(json.dumps({"name": "MI300X", "mem_bandwidth_gbps": 5300, "peak_tflops": 1307}))
    assert resolve_hardware(str(hw)).peak_tflops == 1307
    cfg = tmp_path / "config.json"
    cfg.write_text(
        json.dumps(
            {
                "num_hidden_layers": 30,
                "hidden_size": 576,
                "intermediate_size": 1536,
                "num_attention_heads": 9,
                "num_key_value_heads": 3,
                "vocab_size": 49152,
                "tie_word_embeddings": True,
            }
        )
    )
    assert resolve_model(str(cfg)).matmul_params == 134_479_872
    with pytest.raises(UserError, match="unknown GPU 'B300'"):
        resolve_hardware("B300")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "x", "mem_bandwidth_gbps": 1, "peak_tflops": 1, "hbm": 3}))
    with pytest.raises(UserError, match="unknown key"):
        resolve_hardware(str(bad))
