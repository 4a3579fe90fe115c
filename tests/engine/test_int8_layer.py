"""The native int8 decoder layer (issue 16's draft, `layers/int8_layer.py`) computes what the
eager int8 layer computes: logits and the K/V it writes, for decode rows with and without KV
windows, multi-token sequences, Llama and Qwen2 (qkv bias), 1 and 2 threads; it is used only
where it applies; its AVX2 build agrees with the native one."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import pytest
import torch

from specsched.engine import LLM
from specsched.engine.layers import int8_layer
from specsched.engine.layers.attention import build_metadata
from specsched.engine.layers.int8_linear import WIDE_ROWS, Int8Linear
from specsched.engine.layers.model import LlamaModel
from specsched.engine.spec.drafters.streaming import streaming_ranges

from .native_helpers import build_for_march


@pytest.fixture(autouse=True)
def kernel_or_skip() -> None:
    if not int8_layer.available():
        pytest.skip("native int8 layer kernel unavailable here (no C++ compiler?)")


@pytest.fixture(scope="module", params=["llama", "qwen2"])
def tiny(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
         tiny_hf_factory: Any) -> LLM:
    path = tmp_path_factory.mktemp(f"int8_layer_{request.param}")
    tiny_hf_factory(path, request.param, max_position_embeddings=512)
    return LLM(str(path), max_model_len=320, max_num_seqs=8, num_threads=1)


def eager(draft: LlamaModel, monkeypatch: pytest.MonkeyPatch) -> None:
    for layer in draft.layers:
        monkeypatch.setattr(layer, "native_int8", False)
    monkeypatch.setattr(int8_layer, "head_runs", lambda h, head: False)


CASES = {
    "decode B=1": ([0], [200], [1], True),
    "decode B=5 windows": ([0, 1, 2, 3, 4], [300, 17, 250, 64, 120], [1] * 5, True),
    "decode B=8 full": (list(range(8)), [5, 40, 80, 120, 160, 200, 240, 280], [1] * 8, False),
    "one sequence q=4": ([2], [150], [4], False),
    "mixed q": ([1, 6], [90, 33], [3, 2], False),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("threads", [1, 2])
def test_native_layer_matches_eager(tiny: LLM, case: str, threads: int,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    slots, starts, qlens, windowed = CASES[case]
    engine = tiny.engine
    draft = engine.model.with_weight_dtype(torch.int8)
    assert all(layer.native_int8 for layer in draft.layers)
    g = torch.Generator().manual_seed(len(slots) * 7 + threads)
    for t in (*engine.kv.k, *engine.kv.v):
        t.copy_(torch.randn(t.shape, generator=g))
    ranges = (tuple(streaming_ranges(s + q - 1, 32, 4) for s, q in zip(starts, qlens))
              if windowed else None)
    meta = build_metadata(slots, starts, qlens, kv_ranges=ranges)
    ids = torch.randint(2, engine.model_cfg.vocab_size, (sum(qlens),), generator=g)
    before = [t.clone() for t in (*engine.kv.k, *engine.kv.v)]
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        fused = draft(ids, meta, engine.kv).clone()
        fused_kv = [t.clone() for t in (*engine.kv.k, *engine.kv.v)]
        for t, b in zip((*engine.kv.k, *engine.kv.v), before, strict=True):
            t.copy_(b)
        with monkeypatch.context() as m:
            eager(draft, m)
            want = draft(ids, meta, engine.kv)
    finally:
        torch.set_num_threads(old)
    assert fused.shape == want.shape == (sum(qlens), engine.model_cfg.vocab_size)
    assert torch.allclose(fused, want, rtol=1e-4, atol=1e-4 * want.abs().max().item())
    for got, ref in zip(fused_kv, (*engine.kv.k, *engine.kv.v), strict=True):
        assert torch.allclose(got, ref, rtol=1e-4, atol=1e-5)
    changed = sum(not torch.equal(a, b) for a, b in zip(fused_kv, before, strict=True))
    assert changed == 2 * len(engine.kv.k)  # every layer's K and V were written


def test_used_only_where_it_applies(tiny: LLM) -> None:
    model = tiny.engine.model
    assert not any(layer.native_int8 for layer in model.layers)  # fp32 target: eager
    draft = model.with_weight_dtype(torch.int8)
    layer = draft.layers[0]
    k_cache = tiny.engine.kv.k[0]
    assert int8_layer.runs(torch.zeros(WIDE_ROWS, 64), k_cache)
    assert not int8_layer.runs(torch.zeros(WIDE_ROWS + 1, 64), k_cache)  # the wide copies'
    assert not int8_layer.runs(torch.zeros(2, 64, dtype=torch.bfloat16), k_cache)
    assert not int8_layer.runs(torch.zeros(2, 64), k_cache.transpose(2, 3))
    assert not int8_layer.head_runs(torch.zeros(1, 64), model.lm_head)  # not int8
    assert int8_layer.head_runs(torch.zeros(1, 64), draft.lm_head)
    assert not int8_layer.head_runs(torch.zeros(0, 64), draft.lm_head)
    o = layer.o
    assert isinstance(o, Int8Linear)
    biased = Int8Linear(o.qweight, o.scale, torch.zeros(o.out_features))
    layer.o = biased  # an o bias: the kernel has none, so the layer stays eager
    try:
        assert not int8_layer.fusable(layer)
    finally:
        layer.o = o


def test_beyond_the_cache_is_an_error_before_any_write(tiny: LLM) -> None:
    engine = tiny.engine
    draft = engine.model.with_weight_dtype(torch.int8)
    k_cache, v_cache = engine.kv.k[0], engine.kv.v[0]
    cos, sin = draft.rope.lookup(torch.tensor([0]), torch.float32)
    before = k_cache.clone()
    for slot, start in ((0, k_cache.shape[2]), (k_cache.shape[0], 0)):
        meta = build_metadata([slot], [start], [1])
        with pytest.raises(ValueError, match="beyond the cache"):
            int8_layer.pre(draft.layers[0], torch.zeros(1, 64), cos, sin, k_cache, v_cache, meta)
    assert torch.equal(before, k_cache)


@pytest.mark.parametrize("march", ["haswell", "native"])
def test_avx2_and_native_builds_agree(march: str, tmp_path: Path) -> None:
    """The post half (three matmuls, RMSNorm, SiLU) built for AVX2 and for this CPU equals the
    same math in torch."""
    fn = build_for_march("int8_layer.cpp", march, tmp_path).int8_attn_post_f32
    p, i = ctypes.c_void_p, ctypes.c_int64
    fn.restype = ctypes.c_int
    fn.argtypes = [p, p, i, i, i, p, p, p, ctypes.c_float, p, p, i, p, p, p, ctypes.c_int]
    g = torch.Generator().manual_seed(5)
    hidden, q_size, inter, eps = 96, 64, 160, 1e-5
    o = Int8Linear.quantize(torch.randn(hidden, q_size, generator=g) * 0.1)
    gu = Int8Linear.quantize(torch.randn(2 * inter, hidden, generator=g) * 0.1)
    down = Int8Linear.quantize(torch.randn(hidden, inter, generator=g) * 0.1)
    norm = torch.rand(hidden, generator=g) + 0.5
    for rows in (1, 3, 8):
        h, attn = torch.randn(rows, hidden, generator=g), torch.randn(rows, q_size, generator=g)
        y = torch.empty(rows, hidden)
        assert fn(h.data_ptr(), attn.data_ptr(), rows, hidden, q_size, o.qweight.data_ptr(),
                  o.scale.data_ptr(), norm.data_ptr(), eps, gu.qweight.data_ptr(),
                  gu.scale.data_ptr(), inter, down.qweight.data_ptr(), down.scale.data_ptr(),
                  y.data_ptr(), 2) == 0
        h1 = h.double() + attn.double() @ o.weight.double().T
        x = h1 * torch.rsqrt(h1.pow(2).mean(-1, keepdim=True) + eps) * norm.double()
        gate, up = (x @ gu.weight.double().T).chunk(2, dim=-1)
        want = h1 + (torch.nn.functional.silu(gate) * up) @ down.weight.double().T
        assert torch.allclose(y.double(), want, rtol=1e-4, atol=1e-4 * want.abs().max().item())
