"""The timed kernels compute the same verify attention (so they are timing the same work)."""

from __future__ import annotations

import pytest
import torch

from specsched.microbench.geometry import AttentionGeometry
from specsched.microbench.kernels import KernelKind, allocate_store, build_step
from specsched.microbench.shapes import BatchShape

GEO = AttentionGeometry("tiny", num_layers=3, num_heads=4, num_kv_heads=2, head_dim=16)
SHAPE = BatchShape("t", "test", "sum=134", (40, 7, 23, 64))
Q = 3  # K = 2
KINDS = (KernelKind.ENGINE, KernelKind.PADDED, KernelKind.NESTED)


def _store_with_matching_packed_cache(tail: int = 0) -> object:
    """`tail`: unused packed capacity past the shape's Σ(ctx + q) (the grid's larger shapes)."""
    b = SHAPE.batch_size
    store = allocate_store(
        GEO, b, SHAPE.max_ctx + Q, SHAPE.total_ctx + b * Q + tail, KINDS, 1 << 30,
        torch.float32, torch.device("cpu"), seed=0,
    )
    for i in range(store.num_distinct):  # the packed (varlen) buffer holds the slots' keys
        off = 0
        for s, ctx in enumerate(SHAPE.contexts):
            n = ctx + Q
            store.packed_k[i][off : off + n] = store.slot_k[i][s, :, :n].transpose(0, 1)
            store.packed_v[i][off : off + n] = store.slot_v[i][s, :, :n].transpose(0, 1)
            off += n
    return store


def test_engine_padded_and_nested_agree() -> None:
    store = _store_with_matching_packed_cache()
    assert store.num_distinct == GEO.num_layers
    b, g, hkv, d = SHAPE.batch_size, GEO.group, GEO.num_kv_heads, GEO.head_dim
    engine = build_step(KernelKind.ENGINE, SHAPE, GEO, Q, store)()  # [B*q, Hq, D]
    padded = build_step(KernelKind.PADDED, SHAPE, GEO, Q, store)()  # [B, Hkv, G*q, D]
    padded = padded.view(b, hkv, g, Q, d).permute(0, 3, 1, 2, 4).reshape(b * Q, hkv * g, d)
    torch.testing.assert_close(engine, padded, rtol=1e-4, atol=1e-5)
    nested = build_step(KernelKind.NESTED, SHAPE, GEO, Q, store)()
    per_seq = engine.view(b, Q, hkv, g, d)
    for s, out in enumerate(nested.unbind()):  # out: [Hkv, G*q, D]
        last = out.reshape(hkv, g, Q, d)[:, :, Q - 1]  # the last query sees every key: no mask
        torch.testing.assert_close(last, per_seq[s, Q - 1], rtol=1e-4, atol=1e-5)


def test_flex_masks_the_packed_tail_and_agrees_with_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # flex runs over the whole packed capacity (one tensor size for every shape: one compile);
    # the tail past this shape's keys must be masked out. Eager flex here: compiling takes ~30 s
    # on a CPU, and the mask, not the compiler, is what this checks.
    pytest.importorskip("torch.nn.attention.flex_attention")
    monkeypatch.setattr(torch, "compile", lambda fn, **_: fn)
    store = _store_with_matching_packed_cache(tail=150)
    b = SHAPE.batch_size
    engine = build_step(KernelKind.ENGINE, SHAPE, GEO, Q, store)()  # [B*q, Hq, D]
    flex = build_step(KernelKind.FLEX, SHAPE, GEO, Q, store)()  # [1, Hq, B*q, D]
    assert flex.shape == (1, GEO.num_heads, b * Q, GEO.head_dim)
    torch.testing.assert_close(flex[0].transpose(0, 1), engine, rtol=1e-4, atol=1e-5)


def test_memory_cap_limits_distinct_layer_caches() -> None:
    store = allocate_store(
        GEO, 4, 128, 512, (KernelKind.ENGINE,), 1, torch.float32, torch.device("cpu"), seed=0
    )
    assert store.num_distinct == 1 and store.packed_k == []
    step = build_step(KernelKind.ENGINE, SHAPE, GEO, Q, store)
    assert step().shape == (SHAPE.batch_size * Q, GEO.num_heads, GEO.head_dim)
