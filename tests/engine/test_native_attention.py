"""The native CPU attention kernel (one call per layer for decode and verify) equals the SDPA
paths: ragged q and contexts, GQA groups, head dims, split contexts, mixed prefill batches."""

from __future__ import annotations

import pytest
import torch

from specsched.engine.layers import cpu_kernels
from specsched.engine.layers.attention import build_metadata, ragged_attention, sdpa_attention

TOL = 2e-5


@pytest.fixture(autouse=True)
def kernel_on_every_isa(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel is tested wherever it builds, also where attention would not prefer it
    (CPUs with neither AVX-512F nor AVX2 + FMA: `cpu_kernels.preferred`)."""
    monkeypatch.setattr(cpu_kernels, "preferred", lambda: True)


def test_attention_prefers_the_kernel_with_avx512_or_avx2(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.undo()
    caps = torch.cpu.get_capabilities()
    wide = bool(caps.get("avx512_f") or (caps.get("avx2") and caps.get("fma3")))
    assert cpu_kernels.preferred() is wide
    calls: list[int] = []
    real = cpu_kernels.ragged_attention_cpu
    monkeypatch.setattr(cpu_kernels, "ragged_attention_cpu",
                        lambda *a: calls.append(1) or real(*a))
    for prefer in (False, True):
        monkeypatch.setattr(cpu_kernels, "preferred", lambda p=prefer: p)
        compare([0], [300], [4], 9, 3, 64)
    q, k = torch.zeros(1, 1, 64), torch.zeros(1, 1, 1, 64)
    assert calls == ([1] if cpu_kernels.available(q, k) else [])


def kernel_or_skip(head_dim: int) -> None:
    q, k = torch.zeros(1, 1, head_dim), torch.zeros(1, 1, 1, head_dim)
    if not cpu_kernels.available(q, k):
        pytest.skip("native kernel unavailable here (no C++ compiler?)")


def caches(slots: int, hkv: int, length: int, d: int, seed: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(slots, hkv, length, d, generator=g),
            torch.randn(slots, hkv, length, d, generator=g))


def compare(slots: list[int], starts: list[int], qlens: list[int], hq: int, hkv: int, d: int,
            length: int = 1100, seed: int = 0, threads: int | None = None) -> None:
    k_cache, v_cache = caches(8, hkv, length, d, seed)
    g = torch.Generator().manual_seed(seed + 1)
    # q as the model produces it: a view into a wider [T, Hq + Hkv, D] tensor (token stride > Hq*D)
    q = torch.randn(sum(qlens), hq + hkv, d, generator=g)[:, :hq]
    meta = build_metadata(slots, starts, qlens)
    old = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        got = ragged_attention(q, k_cache, v_cache, meta, 0.3)
    finally:
        torch.set_num_threads(old)
    ref = sdpa_attention(q, k_cache, v_cache, meta, 0.3)
    assert got.shape == ref.shape
    assert (got - ref).abs().max().item() < TOL


@pytest.mark.parametrize(("hq", "hkv", "d"), [(9, 3, 64), (4, 2, 16), (8, 8, 32), (8, 2, 64)])
def test_ragged_verify_batch_matches_sdpa(
    hq: int, hkv: int, d: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel_or_skip(d)
    calls: list[int] = []
    real = cpu_kernels.ragged_attention_cpu
    monkeypatch.setattr(cpu_kernels, "ragged_attention_cpu",
                        lambda *a: calls.append(1) or real(*a))
    # ragged q (decode, verify K=3, K=7, ...), short / long / split contexts, scattered slots
    compare([5, 0, 3, 7, 1], [1000, 0, 37, 511, 700], [1, 2, 4, 8, 5], hq, hkv, d)
    assert calls == [1]  # one call for the whole batch


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("start", "qlen"), [(0, 1), (1, 1), (255, 1), (256, 4), (1040, 9)])
def test_single_sequence_any_split_matches_sdpa(start: int, qlen: int, threads: int) -> None:
    kernel_or_skip(64)
    compare([2], [start], [qlen], 9, 3, 64, threads=threads)


def test_max_rows_per_sequence_and_beyond() -> None:
    kernel_or_skip(64)
    max_q = cpu_kernels.MAX_ROWS // 3  # G = 3: 21 queries = 63 rows, the kernel's limit
    compare([0, 1], [300, 20], [max_q, 1], 9, 3, 64)
    # a prefill chunk beyond the limit in the same batch: kernel for the rest, SDPA for it
    compare([0, 1, 2], [300, 0, 600], [max_q + 1, 40, 3], 9, 3, 64)


def test_batched_decode_equals_single_token_path() -> None:
    kernel_or_skip(64)
    compare([3, 1, 6, 0], [17, 900, 256, 1050], [1, 1, 1, 1], 9, 3, 64)
    compare([3], [17], [1], 9, 3, 64)


def test_out_of_cache_batch_is_refused() -> None:
    kernel_or_skip(64)
    k_cache, v_cache = caches(2, 3, 64, 64, 0)
    q = torch.randn(2, 9, 64)
    with pytest.raises(ValueError, match="beyond the cache"):
        ragged_attention(q, k_cache, v_cache, build_metadata([0], [63], [2]), 0.1)
    with pytest.raises(ValueError, match="beyond the cache"):
        ragged_attention(q[:1], k_cache, v_cache, build_metadata([2], [3], [1]), 0.1)


@pytest.mark.parametrize("threads", [1, 2])
def test_streaming_windows_match_sdpa(threads: int) -> None:
    """Draft steps (q = 1, sinks + recent window, ragged windows, one window split into items)
    and a windowed q > 1 batch, against SDPA's gather paths."""
    kernel_or_skip(64)
    k_cache, v_cache = caches(4, 3, 1200, 64, 3)
    q = torch.randn(4, 9 + 3, 64)[:, :9]
    ranges = (((0, 4), (700, 1001)), ((0, 13),), ((0, 4), (25, 41)), ((0, 1100),))
    meta = build_metadata([2, 0, 3, 1], [1000, 12, 40, 1099], [1, 1, 1, 1], kv_ranges=ranges)
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        got = ragged_attention(q, k_cache, v_cache, meta, 0.2)
    finally:
        torch.set_num_threads(old)
    assert (got - sdpa_attention(q, k_cache, v_cache, meta, 0.2)).abs().max().item() < TOL
    meta2 = build_metadata([1, 2], [30, 99], [3, 2], kv_ranges=(((0, 2), (20, 33)), ((0, 101),)))
    q2 = torch.randn(5, 9, 64)
    got2 = ragged_attention(q2, k_cache, v_cache, meta2, 0.2)
    assert (got2 - sdpa_attention(q2, k_cache, v_cache, meta2, 0.2)).abs().max().item() < TOL


def test_other_dtypes_keep_sdpa_paths() -> None:
    k_cache, _ = caches(2, 3, 64, 64, 0)
    q = torch.randn(2, 9, 64)
    assert not cpu_kernels.available(q.bfloat16(), k_cache.bfloat16())
    assert not cpu_kernels.available(q, k_cache[:, :, :, :32])  # not contiguous


def test_query_tile_is_the_free_rows_over_the_gqa_group_where_attention_takes_the_kernel(
        monkeypatch: pytest.MonkeyPatch) -> None:
    kernel_or_skip(64)
    q, k = torch.zeros(1, 9, 64), torch.zeros(1, 3, 8, 64)
    lanes = cpu_kernels.lanes(64)
    # the build's vector width: one AVX-512 register of fp32 where the CPU has one, else 8
    assert lanes == (16 if torch.cpu.get_capabilities().get("avx512_f") else 8)
    # 16 free rows on either ISA (one AVX-512 vector, two AVX2 ones): G = 3: 5 tokens x 3 rows
    assert cpu_kernels.query_tile(9, 3, q, k) == 5
    assert cpu_kernels.query_tile(8, 8, q, k) == 16
    assert cpu_kernels.query_tile(32, 4, q, k) == 2
    assert cpu_kernels.query_tile(64, 2, q, k) == 1  # G = 32 > 16 rows: one token per tile
    assert cpu_kernels.query_tile(9, 3, q.double(), k.double()) is None  # SDPA: no tiles
    monkeypatch.setattr(cpu_kernels, "preferred", lambda: False)
    assert cpu_kernels.query_tile(9, 3, q, k) is None
