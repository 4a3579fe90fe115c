"""Weight-only int8 matmul for drafts: `x @ W.T * scale + b` with W int8, one scale per row.

A draft token streams every weight of the draft once, so its cost is bytes: int8 weights are a
quarter of fp32's and half of bf16's. Quantization is symmetric per output row (scale =
max|w| / 127, round to nearest): the weights keep ~7 bits relative to their row's largest, about
bf16's 8-bit mantissa; only the draft is approximated (verification stays with the fp32 target,
so greedy output is unchanged and sampled output keeps the target's distribution).

The kernel (`csrc/int8_linear.cpp`, built by `native_build`) widens 16 (AVX2: 8) weights at a time
and accumulates in fp32, x and y fp32; its one-row throughput is what matters (a B=1 draft):
with a software prefetch it ran the model's matmuls 2.3x faster than oneDNN's packed bf16 at one
row and 2.0x at 4 rows, equal at 8, but 1.7x slower at 16 rows (compute-bound: every weight is
widened and multiplied once per row). So an `Int8Linear` holds a `wide` matmul for batches of
more than WIDE_ROWS rows (`linear.quantize_int8`: a bf16 copy where the CPU runs bf16 natively,
else the fp32 weight; notes/engine.md, "int8 draft"). The kernel has an AVX2 path (8-lane
vectors; measured on this Xeon built with -march=haswell: 16.9 ms for the model's one-row
matmuls vs fp32 57.9). Where it cannot build (no compiler, not a CPU tensor), `available` is
False and `Int8Linear` falls back to a dequantizing `F.linear` (correct, slow):
`draft_weight_dtype` only picks int8 where the kernel runs.
"""

from __future__ import annotations

import ctypes
from functools import cache
from typing import Protocol

import torch
import torch.nn.functional as F

from specsched.engine.layers.native_build import load_library

WIDE_ROWS = 8  # more rows than this: the `wide` copy, where there is one
_P = ctypes.c_void_p
_I = ctypes.c_int64


@cache
def _load() -> ctypes.CDLL | None:
    lib = load_library("int8_linear.cpp")
    if lib is not None:
        fn = lib.int8_linear_f32
        fn.restype = ctypes.c_int
        fn.argtypes = [_P, _I, _I, _P, _I, _P, _P, _P, ctypes.c_int]
    return lib


def available(device: torch.device | str) -> bool:
    """Whether the native int8 kernel runs on `device` (a CPU where it built)."""
    return torch.device(device).type == "cpu" and _load() is not None


def quantize_rows(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # [N, K] int8, [N] fp32
    """Symmetric per-row int8: w ~ q * scale[:, None], |q| <= 127."""
    w = w.float()
    scale = w.abs().amax(dim=1).clamp_min(torch.finfo(torch.float32).tiny) / 127.0  # [N]
    q = torch.round(w / scale[:, None]).clamp_(-127, 127).to(torch.int8)
    return q.contiguous(), scale.contiguous()


class WideMatMul(Protocol):
    """What an `Int8Linear` hands batches of more than WIDE_ROWS rows to (a bf16 `Linear`)."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor: ...

    def nbytes(self) -> int: ...


class Int8Linear:
    """One weight `[N, K]` held as int8 rows and fp32 row scales; the `Linear` interface."""

    __slots__ = ("bias", "in_features", "out_features", "qweight", "scale", "wide", "wide_owned")

    def __init__(self, qweight: torch.Tensor, scale: torch.Tensor,
                 bias: torch.Tensor | None = None, wide: WideMatMul | None = None,
                 wide_owned: bool = True) -> None:
        self.qweight = qweight  # [N, K] int8
        self.scale = scale  # [N] fp32
        self.bias = None if bias is None else bias.float().contiguous()  # [N] fp32
        self.out_features, self.in_features = qweight.shape
        self.wide = wide  # the same weight for > WIDE_ROWS rows (None: the int8 kernel)
        self.wide_owned = wide_owned  # False: `wide` is shared (the target's own), not a copy

    @classmethod
    def quantize(cls, weight: torch.Tensor, bias: torch.Tensor | None = None,
                 wide: WideMatMul | None = None, wide_owned: bool = True) -> Int8Linear:
        return cls(*quantize_rows(weight), bias, wide, wide_owned)

    @property
    def weight(self) -> torch.Tensor:  # [N, K] fp32, the dequantized weight
        return self.qweight.float() * self.scale[:, None]

    @property
    def dtype(self) -> torch.dtype:
        return torch.int8

    def to(self, dtype: torch.dtype) -> Int8Linear:
        """Itself for int8; an int8 weight is the end of the line (never re-quantized)."""
        if dtype != torch.int8:
            raise ValueError(f"an int8 weight cannot be converted to {dtype}")
        return self

    def nbytes(self) -> int:
        """Bytes held: the int8 weight, its scales and the wide copy (a shared one: 0)."""
        wide = self.wide.nbytes() if self.wide is not None and self.wide_owned else 0
        return self.qweight.numel() + 4 * self.out_features + wide

    def __call__(self, x: torch.Tensor) -> torch.Tensor:  # [T, K] -> [T, N], x's dtype
        if self.wide is not None and x.shape[0] > WIDE_ROWS:
            return self.wide(x)
        lib = _load() if x.device.type == "cpu" and self.in_features % 16 == 0 else None
        if lib is None:
            return F.linear(x.float(), self.weight, self.bias).to(x.dtype)
        xf = x.float().contiguous()  # [T, K]
        y = torch.empty(xf.shape[0], self.out_features, dtype=torch.float32)  # [T, N]
        bias = None if self.bias is None else self.bias.data_ptr()
        rc = lib.int8_linear_f32(xf.data_ptr(), xf.shape[0], self.in_features,
                                 self.qweight.data_ptr(), self.out_features,
                                 self.scale.data_ptr(), bias, y.data_ptr(),
                                 torch.get_num_threads())
        if rc != 0:  # unreachable: K % 16 is checked above
            raise ValueError(f"int8 kernel rejected K={self.in_features}")
        return y.to(x.dtype)
