"""`x @ W.T + b` with the weight laid out once, at load time, for the device's fastest kernel.

On CPU the matmuls go through oneDNN's linear (`torch.ops.mkldnn._linear_pointwise`), ~2x faster
than `F.linear` (MKL) for the few-row shapes of decode and verify. The weight is additionally
reordered once into oneDNN's blocked layout (`mkldnn._reorder_linear_weight`, the prepacking
inductor does under `freezing`): measured 25-30% faster for 4-64 rows and equal at 1 row in
fp32, because a plain row-major weight is re-blocked on every call for those shapes (see
notes/engine.md, "CPU decode speed-up"). Prepacking is a pure data permutation: the logical
weight (`.weight`) is unchanged; only the accumulation order inside the kernel differs, as it
already does between row counts.

Low-precision weights (the draft's copy, `Linear.to`): a bf16 weight with fp32 activations
casts the input rows to bf16, runs oneDNN's bf16 kernel (fp32 accumulation; AMX / AVX512_BF16
where the CPU has them) and returns fp32. Prepacked bf16 read the weights 1.7-2.6x faster than
prepacked fp32 at 1-8 rows on this project's Xeon (notes/engine.md, "Issue 16").
`draft_weight_dtype` picks bf16 only where the CPU runs it natively. int8 weights (`Linear.to(
torch.int8)`) become an `Int8Linear` (`specsched.engine.layers.int8_linear`, a native kernel).

Other devices use `F.linear` on the plain weight.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from specsched.engine.layers import int8_linear
from specsched.engine.layers.int8_linear import Int8Linear

PACK_ROWS = 16  # row-count hint for the blocked layout; measured best for 4-64 rows
ONEDNN_DTYPES = (torch.float32, torch.bfloat16)


def onednn_fp32(w: torch.Tensor) -> bool:
    """Whether `w` takes the fp32 oneDNN path (CPU, fp32, oneDNN built in)."""
    return w.dtype == torch.float32 and _onednn(w)


def _onednn(w: torch.Tensor) -> bool:
    """Whether oneDNN's linear runs `w`: CPU, fp32 or bf16, oneDNN built in; bf16 only where
    oneDNN has a bf16 kernel for this CPU (AVX512BW/VL/DQ or AVX-NE-CONVERT: an AVX2-only CPU
    has none, and `F.linear` on the plain bf16 weight runs instead)."""
    if w.device.type != "cpu" or w.dtype not in ONEDNN_DTYPES:
        return False
    if not torch.backends.mkldnn.is_available():
        return False
    return w.dtype == torch.float32 or bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def native_bf16(device: torch.device | str) -> bool:
    """Whether `device` runs bf16 matmuls natively: a CPU with AVX512_BF16 or AMX-BF16
    (oneDNN otherwise converts in software, no faster than fp32), or a CUDA device with bf16."""
    dev = torch.device(device)
    if dev.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    caps = torch.cpu.get_capabilities()
    return bool(caps.get("avx512_bf16") or caps.get("amx_bf16"))


def draft_weight_dtype(requested: str, target: torch.dtype, device: torch.device | str
                       ) -> torch.dtype:
    """The weight dtype a draft runs with: "float32" -> the target's own weights; "bfloat16" ->
    bf16 (a copy when the target is fp32); "int8" -> int8 rows (`quantize_int8`) where their
    native kernel runs, else as "auto" without it; "auto" -> int8 where its kernel runs, else
    bf16 where `native_bf16`, else the target's. A target already in 16 bits is never up-cast.
    Measured (notes/engine.md, "int8 draft"): a B=1 draft token 32.8 ms int8 vs 48.0 bf16 vs
    71.2 fp32 at ctx 512, with the same acceptance."""
    if target != torch.float32 or requested == "float32":
        return target
    if requested in ("int8", "auto") and int8_linear.available(device):
        return torch.int8
    if requested == "bfloat16" or (requested in ("auto", "int8") and native_bf16(device)):
        return torch.bfloat16
    return target


def quantize_int8(weight: torch.Tensor, bias: torch.Tensor | None = None,
                  full: Linear | None = None) -> Int8Linear:
    """int8 rows of `weight` plus the matmul that batches of more than `WIDE_ROWS` rows take
    (there the int8 kernel is compute-bound): a bf16 copy where the CPU runs bf16 natively
    (AMX / AVX512_BF16), else `full` (the weight's own fp32 `Linear`, shared, no copy) or a
    new fp32 `Linear`. Model-shaped probe (notes/engine.md): at 16 rows int8 64 ms vs bf16 37
    (AVX-512 build); AVX2 build 123 ms vs fp32 92."""
    if native_bf16(weight.device):
        wide = Linear(weight.to(torch.bfloat16), None if bias is None else bias.bfloat16())
    elif full is not None:
        return Int8Linear.quantize(weight, bias, full, wide_owned=False)
    else:
        wide = Linear(weight.float(), None if bias is None else bias.float())
    return Int8Linear.quantize(weight, bias, wide)


def make_linear(weight: torch.Tensor, bias: torch.Tensor | None = None, keep_plain: bool = False,
                dtype: torch.dtype | None = None) -> Linear | Int8Linear:
    """A `Linear` over `weight` converted to `dtype` (None: as given; int8: an `Int8Linear`)."""
    if dtype == torch.int8:
        return quantize_int8(weight, bias)
    if dtype is not None:
        weight, bias = weight.to(dtype), None if bias is None else bias.to(dtype)
    return Linear(weight, bias, keep_plain)


def onednn_linear(
    x: torch.Tensor,  # [T, K] CPU, the weight's dtype
    w: torch.Tensor,  # [N, K] plain or oneDNN-packed
    b: torch.Tensor | None = None,  # [N]
) -> torch.Tensor:  # [T, N]
    return torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], "")


class Linear:
    """One weight matrix `[N, K]` (and optional bias `[N]`) prepared for repeated `x @ W.T + b`.

    `keep_plain`: also keep the plain row-major weight (e.g. a tied output layer whose plain copy
    exists anyway as the embedding table); fp32 one-row batches use it (measured equal or
    slightly faster than the blocked layout at 1 row; in bf16 the blocked one is faster).
    Inputs of another dtype than the weight (fp32 rows into a bf16 copy) are cast in and out.
    """

    __slots__ = ("_packed", "_plain", "bias", "in_features", "out_features")

    def __init__(
        self, weight: torch.Tensor, bias: torch.Tensor | None = None, keep_plain: bool = False
    ) -> None:
        self.out_features, self.in_features = weight.shape
        self.bias = bias
        self._packed: torch.Tensor | None = None
        self._plain: torch.Tensor | None = weight
        if _onednn(weight):
            self._packed = torch.ops.mkldnn._reorder_linear_weight(weight.contiguous(), PACK_ROWS)
            if not keep_plain:
                self._plain = None

    @property
    def weight(self) -> torch.Tensor:  # [N, K] dense (a copy when only the packed one is kept)
        if self._plain is not None:
            return self._plain
        assert self._packed is not None
        return self._packed.to_dense()

    @property
    def dtype(self) -> torch.dtype:
        w = self._plain if self._plain is not None else self._packed
        assert w is not None
        return w.dtype

    def to(self, dtype: torch.dtype, keep_plain: bool = False) -> Linear | Int8Linear:
        """A copy with the weight (and bias) in `dtype` (int8: an `Int8Linear`); itself when
        already in it."""
        if dtype == self.dtype:
            return self
        if dtype == torch.int8:
            full = self if self.dtype == torch.float32 else None
            return quantize_int8(self.weight, self.bias, full)
        bias = None if self.bias is None else self.bias.to(dtype)
        return Linear(self.weight.to(dtype), bias, keep_plain)

    def nbytes(self) -> int:
        """Bytes of the logical weight (what one full pass over it reads)."""
        return self.out_features * self.in_features * self.dtype.itemsize

    def __call__(self, x: torch.Tensor) -> torch.Tensor:  # [T, K] -> [T, N], x's dtype
        if x.dtype != self.dtype:
            return self._run(x.to(self.dtype)).to(x.dtype)
        return self._run(x)

    def _run(self, x: torch.Tensor) -> torch.Tensor:
        if self._packed is None:
            assert self._plain is not None
            return F.linear(x, self._plain, self.bias)
        if self._plain is not None and x.shape[0] <= 1 and x.dtype == torch.float32:
            return onednn_linear(x, self._plain, self.bias)  # (bf16: packed is faster)
        return onednn_linear(x, self._packed, self.bias)
