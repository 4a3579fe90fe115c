"""The int8 weight-only kernel (issue 16's draft) equals a float matmul on the dequantized
weights for every row count, with and without bias, on 1 and 2 threads; the quantizer's error
is bounded; batches above WIDE_ROWS take the wide copy; no kernel -> the torch fallback."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from specsched.engine.layers import int8_linear
from specsched.engine.layers.int8_linear import WIDE_ROWS, Int8Linear, quantize_rows
from specsched.engine.layers.linear import Linear, quantize_int8

from .native_helpers import build_for_march


@pytest.fixture(autouse=True)
def kernel_or_skip() -> None:
    if not int8_linear.available("cpu"):
        pytest.skip("native int8 kernel unavailable here (no C++ compiler?)")


def reference(x: torch.Tensor, lin: Int8Linear) -> torch.Tensor:  # [T, N] float64
    y = x.double() @ lin.weight.double().T
    return y if lin.bias is None else y + lin.bias.double()


@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 16, 21])
@pytest.mark.parametrize("shape", [(7, 16), (96, 64), (130, 576), (5, 1536)])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_kernel_matches_dequantized_matmul(rows: int, shape: tuple[int, int], bias: bool,
                                           threads: int) -> None:
    n, k = shape
    g = torch.Generator().manual_seed(rows * 1000 + n + k + threads)
    w = torch.randn(n, k, generator=g) * 0.05
    b = torch.randn(n, generator=g) if bias else None
    lin = Int8Linear.quantize(w, b)  # no wide copy: the kernel takes every row count
    x = torch.randn(rows, k, generator=g)
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        got = lin(x)
    finally:
        torch.set_num_threads(old)
    assert got.shape == (rows, n) and got.dtype == torch.float32
    want = reference(x, lin)
    assert torch.allclose(got.double(), want, rtol=1e-4, atol=1e-4 * want.abs().max().item())


def test_non_contiguous_input_rows() -> None:
    w = torch.randn(48, 64)
    lin = Int8Linear.quantize(w)
    x = torch.randn(64, 5).T  # [5, 64], column-major
    want = reference(x.contiguous(), lin)
    assert torch.allclose(lin(x).double(), want, rtol=1e-4, atol=1e-4 * want.abs().max().item())


def test_quantizer_error_is_half_a_step_per_row() -> None:
    w = torch.randn(64, 96) * torch.logspace(-3, 1, 64)[:, None]  # rows of very different scale
    q, scale = quantize_rows(w)
    assert q.dtype == torch.int8 and q.abs().max().item() <= 127
    err = (q.float() * scale[:, None] - w).abs()
    assert (err <= scale[:, None] * 0.5 + 1e-7).all()
    assert torch.equal(q.abs().amax(dim=1), torch.full((64,), 127, dtype=torch.int8))
    zero_q, zero_scale = quantize_rows(torch.zeros(3, 16))  # an all-zero row: no NaN
    assert not zero_q.any() and torch.isfinite(zero_scale).all()


def test_wide_copy_takes_batches_above_wide_rows() -> None:
    w = torch.randn(32, 64)
    calls: list[int] = []

    class Wide:
        def __call__(self, x: torch.Tensor) -> torch.Tensor:
            calls.append(x.shape[0])
            return torch.zeros(x.shape[0], 32)

        def nbytes(self) -> int:
            return 1000

    lin = Int8Linear.quantize(w, wide=Wide())
    lin(torch.randn(WIDE_ROWS, 64))
    assert calls == []
    assert not lin(torch.randn(WIDE_ROWS + 1, 64)).any() and calls == [WIDE_ROWS + 1]
    assert lin.nbytes() == 32 * 64 + 4 * 32 + 1000
    shared = Int8Linear.quantize(w, wide=Wide(), wide_owned=False)  # e.g. the target's own
    assert shared.nbytes() == 32 * 64 + 4 * 32


def test_without_native_bf16_the_wide_path_is_the_shared_fp32_weight(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from specsched.engine.layers import linear

    monkeypatch.setattr(linear, "native_bf16", lambda device: False)  # an AVX2-only CPU
    full = Linear(torch.randn(40, 64))
    q = full.to(torch.int8)
    assert isinstance(q, Int8Linear) and q.wide is full and q.nbytes() == 40 * 64 + 4 * 40
    fresh = quantize_int8(torch.randn(40, 64))  # no fp32 Linear to share: an own fp32 copy
    assert fresh.wide is not None and fresh.nbytes() == 40 * 64 + 4 * 40 + 40 * 64 * 4


def test_quantize_int8_and_linear_to_agree() -> None:
    w = torch.randn(40, 64)
    a, b = quantize_int8(w), Linear(w).to(torch.int8)
    assert isinstance(b, Int8Linear)
    assert torch.equal(a.qweight, b.qweight) and torch.equal(a.scale, b.scale)
    x = torch.randn(WIDE_ROWS + 4, 64)  # the wide path where there is one: still ~ the weight
    assert torch.allclose(a(x), x @ w.T, rtol=0.05, atol=0.05 * (x @ w.T).abs().max().item())


def test_fallback_without_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    w = torch.randn(24, 64)
    lin = Int8Linear.quantize(w, torch.randn(24))
    x = torch.randn(3, 64)
    fast = lin(x)
    monkeypatch.setattr(int8_linear, "_load", lambda: None)
    slow = lin(x)
    assert torch.allclose(fast, slow, rtol=1e-4, atol=1e-4 * slow.abs().max().item())
    odd = Int8Linear.quantize(torch.randn(8, 20))  # K % 16 != 0: the torch path, still right
    xo = torch.randn(2, 20)
    assert torch.allclose(odd(xo).double(), reference(xo, odd), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("march", ["haswell", "native"])
def test_avx2_and_native_builds_agree(march: str, tmp_path: Path) -> None:
    """The AVX2 path (8-lane vectors) is what an AVX2-only CPU runs; built here explicitly so an
    AVX-512 machine tests it too."""
    import ctypes

    fn = build_for_march("int8_linear.cpp", march, tmp_path).int8_linear_f32
    fn.restype = ctypes.c_int
    p, i = ctypes.c_void_p, ctypes.c_int64
    fn.argtypes = [p, i, i, p, i, p, p, p, ctypes.c_int]
    g = torch.Generator().manual_seed(3)
    for rows in (1, 4, 8, 11):
        for n, k in ((7, 16), (130, 576), (5, 1536)):
            w, b, x = torch.randn(n, k, generator=g), torch.randn(n, generator=g), torch.randn(
                rows, k, generator=g)
            lin = Int8Linear.quantize(w, b)
            y = torch.empty(rows, n)
            assert fn(x.data_ptr(), rows, k, lin.qweight.data_ptr(), n, lin.scale.data_ptr(),
                      lin.bias.data_ptr(), y.data_ptr(), 2) == 0  # type: ignore[union-attr]
            want = reference(x, lin)
            assert torch.allclose(y.double(), want, rtol=1e-4,
                                  atol=1e-4 * want.abs().max().item())
