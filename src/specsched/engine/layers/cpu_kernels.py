"""Native CPU kernels, compiled at first use: one attention call per layer for decode and verify.

`ragged_attention_cpu` runs causal GQA attention for every sequence of a batch that brings few
new tokens (decode q = 1, speculative verify q = K + 1, streaming drafts over sinks + a recent
window; at most 64 query rows G x q per sequence) in ONE call per layer, reading only each
sequence's own cache positions (no padding to the longest context, no gather copies).
Source: `csrc/ragged_attention.cpp` (design notes at its top). Why a kernel: per-sequence SDPA
with a causal mask costs ~1.5x (q=4) to 2x (q=8) of q=1 per context token, plus a Python call per
sequence and layer, and the window path gathered copies of K/V; with the G x q query rows as
vector lanes this kernel reads K and V once per item and costs the same for every G x q up to
its lanes (notes/engine.md, "Issue 16").

Build: `specsched.engine.layers.native_build` (g++ -O3 -march=native -fopenmp, cached per CPU
and source; `SPECSCHED_NATIVE_KERNELS=0` switches it off). No compiler, a non-CPU device, a
non-fp32 cache or a head dim that is not a multiple of 16: `available` is False and attention
keeps its SDPA paths (same results up to float summation order); so does a CPU with neither
AVX-512F nor AVX2 + FMA (`preferred`). The source is portable C++ (GCC vector extensions of one
register's width: 16 lanes with AVX-512, 8 otherwise; `lanes`).
"""

from __future__ import annotations

import ctypes
from functools import cache

import torch

from specsched.engine.layers.native_build import load_library

MAX_ROWS = 64  # G x q query rows per sequence the kernel takes
# G x q query rows whose QK^T and P.V work hides under one read of a key range's K and V: one
# 16-lane vector with AVX-512, two 8-lane vectors with AVX2 (probe, AVX2 EPYC, 1 thread, ctx
# 4096, G = 3, `notes/scripts/attention_isa_probe.py 4096 1 1,2,3,4,5,6,7,8`: 7.9-9.4 us per
# context token for q = 1..5 (3-15 rows, 1-2 vectors) and 12.5-14.3 at q = 6 (18 rows, 3)).
TILE_ROWS = 16
CHUNK_MIN = 256  # keys per work item at least (an item re-reads nothing; fewer items = less merge)
ITEMS_PER_THREAD = 6  # split long contexts until the batch has about this many items per thread

_P = ctypes.c_void_p
_I = ctypes.c_int64


@cache
def _load(head_dim: int) -> ctypes.CDLL | None:
    """The kernel library for `head_dim`, built on first use; None where it cannot be."""
    if head_dim % 16 != 0:
        return None
    lib = load_library("ragged_attention.cpp", (("HEAD_DIM", head_dim),))
    if lib is not None:
        fn = lib.ragged_attention_f32
        fn.restype = ctypes.c_int
        fn.argtypes = [_P, _I, _P, _P, _P, _P, _I, _P, _P, _I, _I, _I, ctypes.c_float,
                       ctypes.c_int]
        lib.ragged_attention_lanes.restype = ctypes.c_int
        lib.ragged_attention_lanes.argtypes = []
    return lib


def available(q: torch.Tensor, k_cache: torch.Tensor) -> bool:
    """Whether `ragged_attention_cpu` can run on these tensors (CPU fp32, kernel built)."""
    return (
        q.device.type == "cpu"
        and q.dtype == torch.float32
        and k_cache.dtype == torch.float32
        and k_cache.is_contiguous()
        and q.stride(2) == 1
        and q.stride(1) == q.shape[2]
        and _load(q.shape[2]) is not None
    )


@cache
def preferred() -> bool:
    """Whether attention should take the kernel where it is `available`: on CPUs with AVX-512F
    (16 lanes) or AVX2 + FMA (8 lanes). The kernel used to have 16 lanes everywhere, two
    registers on AVX2, where it measured ~5x slower than SDPA (2026-12-02) and attention kept
    SDPA; with 8 lanes it measured faster than SDPA there (2026-12-03, seventeenth stop,
    `notes/scripts/attention_isa_probe.py`; BENCHMARKS.md)."""
    caps = torch.cpu.get_capabilities()
    return bool(caps.get("avx512_f") or (caps.get("avx2") and caps.get("fma3")))


def lanes(head_dim: int) -> int | None:
    """Query rows per vector of the kernel built for `head_dim` (16 with AVX-512, 8 without);
    None where it cannot be built."""
    lib = _load(head_dim)
    return None if lib is None else int(lib.ragged_attention_lanes())


def query_tile(num_heads: int, num_kv_heads: int, q: torch.Tensor, k_cache: torch.Tensor
               ) -> int | None:
    """How many query tokens per sequence fit the TILE_ROWS rows whose work is free (TILE_ROWS
    // G) when attention on these tensors takes the kernel, else None. Past it each context
    token costs a QK^T, exp and P·V pass more (the step cost model's tile term, `policy.cost`).
    On AVX2 this is not the 8 lanes of one vector: the step at 8 // G (q = 2 -> 3 for G = 3)
    measured nothing, the one at 16 // G (q = 5 -> 6) +40 % per context token, and a cost
    model that put a pass at q = 3 fitted a K = 5 point 6-10 % low (the AVX2 demos of the
    seventeenth and eighteenth stops)."""
    if lanes(q.shape[2]) is None or not (available(q, k_cache) and preferred()):
        return None
    return max(1, TILE_ROWS // (num_heads // num_kv_heads))


def fits(num_heads: int, num_kv_heads: int, query_len: int) -> bool:
    """Whether a sequence with `query_len` new tokens is within the kernel's row limit."""
    return (num_heads // num_kv_heads) * query_len <= MAX_ROWS


def plan_items(
    key_ranges: list[tuple[tuple[int, int], ...]],  # per kernel sequence: cache ranges it reads
    num_kv_heads: int,
    num_threads: int,
) -> tuple[torch.Tensor, torch.Tensor]:  # items [N, 3] int64 (seq, c0, c1), first [B + 1]
    """Work items: each sequence's key ranges, split so that the batch has about
    ITEMS_PER_THREAD items (x KV heads) per thread, none shorter than CHUNK_MIN keys."""
    total = sum(b - a for ranges in key_ranges for a, b in ranges) * num_kv_heads
    chunk = max(CHUNK_MIN, -(-total // (ITEMS_PER_THREAD * max(1, num_threads))))
    items: list[tuple[int, int, int]] = []
    first = [0]
    for i, ranges in enumerate(key_ranges):
        for a, b in ranges:
            items.extend((i, c, min(c + chunk, b)) for c in range(a, b, chunk))
        first.append(len(items))
    return torch.tensor(items, dtype=torch.long), torch.tensor(first, dtype=torch.long)


def ragged_attention_cpu(
    q: torch.Tensor,  # [T, Hq, D] fp32, head-contiguous (token stride may be larger)
    k_cache: torch.Tensor,  # [S, Hkv, L, D] fp32 contiguous
    v_cache: torch.Tensor,  # [S, Hkv, L, D]
    seq_table: torch.Tensor,  # [B, 4] int64 (slot, start, qlen, q_offset), contiguous
    items: torch.Tensor,  # [N, 3] int64 (sequence row, c0, c1), from `plan_items`
    first: torch.Tensor,  # [B + 1] int64: sequence i owns items first[i] .. first[i + 1] - 1
    scale: float,
    out: torch.Tensor | None = None,  # [T, Hq, D] contiguous; rows of other sequences untouched
) -> torch.Tensor:  # [T, Hq, D]
    """Causal attention of each listed sequence's queries against its slot's cache positions in
    its items' ranges (query j sees positions <= start + j). The caller guarantees slot < S,
    ranges within [0, start + qlen) and start + qlen <= L (unchecked in C)."""
    lib = _load(q.shape[2])
    assert lib is not None, "call available() first"
    _, num_kv_heads, max_len, _ = k_cache.shape
    if out is None:
        out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    rc = lib.ragged_attention_f32(
        q.data_ptr(), q.stride(0), k_cache.data_ptr(), v_cache.data_ptr(), out.data_ptr(),
        seq_table.data_ptr(), seq_table.shape[0], items.data_ptr(), first.data_ptr(),
        q.shape[1], num_kv_heads, max_len, scale, torch.get_num_threads(),
    )
    if rc != 0:
        raise ValueError(f"a sequence has more than {MAX_ROWS} query rows (G x q)")
    return out
