"""An int8 draft's decoder layer in two native calls (`csrc/int8_layer.cpp`), for few rows.

A draft step brings one token per sequence (T = B rows), so its cost is the int8 weights' bytes
plus whatever runs between the matmuls. Eager, a layer is ~20 torch ops (RMSNorm alone is six
aten calls on this torch) and the int8 matmuls' input/output conversions; at ctx 4096 and B=1
that glue was ~8 of a ~22 ms draft token (notes/engine.md, "one native call per layer"). Here a
layer is `pre` (RMSNorm -> qkv -> RoPE -> K/V written into the cache, q returned), the
attention kernel (`ragged_attention`, unchanged), then `post` (o + residual -> RMSNorm ->
gate/up -> SiLU * up -> down + residual); the output layer takes its RMSNorm natively too
(`norm_head`). Same math as the eager int8 path up to float summation order (tested).

Used by `DecoderLayer.forward` when `fusable` holds: every matmul an `Int8Linear` (o, gate/up,
down without bias), at most WIDE_ROWS rows (above that the matmuls are the `wide` copies'),
fp32 activations and a contiguous fp32 CPU cache, and the library built (`available`).
"""

from __future__ import annotations

import ctypes
from functools import cache
from typing import Protocol

import torch

from specsched.engine.config import ModelConfig
from specsched.engine.layers.int8_linear import WIDE_ROWS, Int8Linear
from specsched.engine.layers.metadata import AttentionMetadata
from specsched.engine.layers.native_build import load_library


class LayerWeights(Protocol):
    """What the native layer reads of a decoder layer (`model.DecoderLayer`); the matmuls are
    `Int8Linear`s where `fusable` holds."""

    @property
    def cfg(self) -> ModelConfig: ...
    @property
    def qkv(self) -> object: ...  # [Q+2K, H]
    @property
    def o(self) -> object: ...  # [H, Q]
    @property
    def gate_up(self) -> object: ...  # [2I, H]
    @property
    def down(self) -> object: ...  # [H, I]
    @property
    def input_norm(self) -> torch.Tensor: ...  # [H]
    @property
    def post_norm(self) -> torch.Tensor: ...  # [H]

_P = ctypes.c_void_p
_I = ctypes.c_int64
_F = ctypes.c_float
_C = ctypes.c_int


@cache
def _load() -> ctypes.CDLL | None:
    lib = load_library("int8_layer.cpp")
    if lib is not None:
        for name, args in (
            ("int8_norm_linear_f32", [_P, _I, _I, _P, _F, _P, _I, _P, _P, _P, _C]),
            ("int8_attn_pre_f32", [_P, _I, _I, _P, _F, _P, _P, _P, _P, _P, _I, _I, _I, _P, _P,
                                   _P, _P, _I, _P, _C]),
            ("int8_attn_post_f32", [_P, _P, _I, _I, _I, _P, _P, _P, _F, _P, _P, _I, _P, _P,
                                    _P, _C]),
        ):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = ctypes.c_int, args
    return lib


def available() -> bool:
    return _load() is not None


def _ptr(t: torch.Tensor | None) -> int | None:
    return None if t is None else t.data_ptr()


def fusable(layer: LayerWeights) -> bool:
    """Whether `layer`'s weights are all int8 (o, gate/up, down bias-free) and K % 16 == 0."""
    mats = (layer.qkv, layer.o, layer.gate_up, layer.down)
    return (
        all(isinstance(m, Int8Linear) and m.in_features % 16 == 0 for m in mats)
        and all(isinstance(m, Int8Linear) and m.bias is None for m in mats[1:])
        and available()
    )


def runs(h: torch.Tensor, k_cache: torch.Tensor) -> bool:
    """Whether this batch takes the native layer: few fp32 CPU rows, a contiguous fp32 cache."""
    return (
        h.shape[0] <= WIDE_ROWS
        and h.dtype == torch.float32
        and h.device.type == "cpu"
        and k_cache.dtype == torch.float32
        and k_cache.is_contiguous()
    )


def pre(
    layer: LayerWeights,
    h: torch.Tensor,  # [T, H] fp32
    cos: torch.Tensor,  # [T, 1, D/2]
    sin: torch.Tensor,  # [T, 1, D/2]
    k_cache: torch.Tensor,  # [S, Hkv, L, D], written at the tokens' slots and positions
    v_cache: torch.Tensor,  # [S, Hkv, L, D]
    meta: AttentionMetadata,
) -> torch.Tensor:  # q [T, Hq, D]
    cfg, qkv = layer.cfg, layer.qkv
    assert isinstance(qkv, Int8Linear)
    lib = _load()
    assert lib is not None
    t = h.shape[0]
    meta.check_cache(k_cache)
    h = h.contiguous()
    cos, sin = cos.contiguous(), sin.contiguous()
    q = torch.empty(t, cfg.num_heads, cfg.head_dim)
    rc = lib.int8_attn_pre_f32(
        h.data_ptr(), t, cfg.hidden_size, layer.input_norm.data_ptr(), cfg.rms_norm_eps,
        qkv.qweight.data_ptr(), qkv.scale.data_ptr(), _ptr(qkv.bias), cos.data_ptr(),
        sin.data_ptr(), cfg.num_heads, cfg.num_kv_heads, cfg.head_dim,
        meta.token_slots.data_ptr(), meta.token_positions.data_ptr(), k_cache.data_ptr(),
        v_cache.data_ptr(), k_cache.shape[2], q.data_ptr(), torch.get_num_threads())
    if rc != 0:
        raise ValueError(f"int8 layer kernel rejected hidden size {cfg.hidden_size}")
    return q


def post(
    layer: LayerWeights,
    h: torch.Tensor,  # [T, H] residual stream before attention
    attn: torch.Tensor,  # [T, Hq, D] attention output
) -> torch.Tensor:  # [T, H]
    cfg, o, gate_up, down = layer.cfg, layer.o, layer.gate_up, layer.down
    assert isinstance(o, Int8Linear) and isinstance(gate_up, Int8Linear)
    assert isinstance(down, Int8Linear)
    lib = _load()
    assert lib is not None
    t = h.shape[0]
    h, attn = h.contiguous(), attn.contiguous()
    out = torch.empty(t, cfg.hidden_size)
    rc = lib.int8_attn_post_f32(
        h.data_ptr(), attn.data_ptr(), t, cfg.hidden_size, cfg.q_size, o.qweight.data_ptr(),
        o.scale.data_ptr(), layer.post_norm.data_ptr(), cfg.rms_norm_eps,
        gate_up.qweight.data_ptr(), gate_up.scale.data_ptr(), down.in_features,
        down.qweight.data_ptr(), down.scale.data_ptr(), out.data_ptr(), torch.get_num_threads())
    if rc != 0:
        raise ValueError("int8 layer kernel rejected the layer's sizes")
    return out


def head_runs(h: torch.Tensor, head: object) -> bool:
    """Whether the output layer takes `norm_head`: an int8 head, few fp32 CPU rows."""
    return (isinstance(head, Int8Linear) and head.in_features % 16 == 0
            and 1 <= h.shape[0] <= WIDE_ROWS and h.dtype == torch.float32
            and h.device.type == "cpu" and available())


def norm_head(
    h: torch.Tensor,  # [N, H] fp32
    norm_w: torch.Tensor,  # [H]
    eps: float,
    head: Int8Linear,  # [V, H]
) -> torch.Tensor:  # [N, V] fp32
    """The final RMSNorm and the int8 output layer in one call."""
    lib = _load()
    assert lib is not None
    h = h.contiguous()
    n = h.shape[0]
    y = torch.empty(n, head.out_features)
    rc = lib.int8_norm_linear_f32(
        h.data_ptr(), n, head.in_features, norm_w.data_ptr(), eps, head.qweight.data_ptr(),
        head.out_features, head.scale.data_ptr(), _ptr(head.bias), y.data_ptr(),
        torch.get_num_threads())
    if rc != 0:
        raise ValueError(f"int8 head kernel rejected K={head.in_features}")
    return y
