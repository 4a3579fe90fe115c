"""Engine behaviour on a tiny random model: ragged batching, continuous batching, prefix cache,
rollback, KV windows, sampling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from specsched.engine import LLM, SamplingParams, build_metadata
from specsched.engine.layers.attention import ragged_attention
from specsched.engine.layers.kv_cache import KVCache
from specsched.engine.layers.model import LlamaModel
from specsched.engine.loading.hf import load_hf_dir


def model_and_cache(path: Path, slots: int = 4) -> tuple[LlamaModel, KVCache]:
    cfg, weights = load_hf_dir(path)
    return LlamaModel(cfg, weights, 128, torch.float32, "cpu"), KVCache(
        cfg, slots, 128, torch.float32, "cpu"
    )


def prompts(n: int, lengths: list[int], seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [
        torch.randint(2, 128, (lengths[i % len(lengths)],), generator=g).tolist() for i in range(n)
    ]


def test_ragged_batch_equals_each_sequence_alone(tiny_llama: tuple[Path, Any]) -> None:
    path, _ = tiny_llama
    seqs = prompts(3, [9, 30, 17])
    ctx = [5, 22, 16]  # already cached part; q = 4, 8, 1
    model, kv = model_and_cache(path)
    for slot, (s, c) in enumerate(zip(seqs, ctx, strict=True)):
        model(torch.tensor(s[:c]), build_metadata([slot], [0], [c]), kv)
    meta = build_metadata([0, 1, 2], ctx, [len(s) - c for s, c in zip(seqs, ctx, strict=True)])
    batched = model(
        torch.tensor([t for s, c in zip(seqs, ctx, strict=True) for t in s[c:]]), meta, kv
    )
    off = 0
    for s, c in zip(seqs, ctx, strict=True):
        m1, kv1 = model_and_cache(path, slots=1)
        alone = m1(torch.tensor(s), build_metadata([0], [0], [len(s)]), kv1)[c:]
        assert (batched[off : off + len(s) - c] - alone).abs().max().item() < 1e-5
        off += len(s) - c


def test_rollback_is_lowering_the_length(tiny_llama: tuple[Path, Any]) -> None:
    path, _ = tiny_llama
    model, kv = model_and_cache(path)
    base, rejected, accepted = [5, 6, 7, 8], [40, 41, 42], [50, 51]
    model(torch.tensor(base + rejected), build_metadata([1], [0], [7]), kv)
    after = model(torch.tensor(accepted), build_metadata([1], [4], [2]), kv)  # length back to 4
    m2, kv2 = model_and_cache(path)
    fresh = m2(torch.tensor(base + accepted), build_metadata([1], [0], [6]), kv2)[4:]
    assert (after - fresh).abs().max().item() < 1e-5


def test_kv_window_reads_only_listed_positions() -> None:
    torch.manual_seed(0)
    k_cache = torch.randn(2, 2, 64, 8)  # [S, Hkv, L, D]
    v_cache = torch.randn(2, 2, 64, 8)
    q = torch.randn(3, 4, 8)  # 3 new tokens at positions 40..42 of slot 1, Hq = 4
    ranges = (((0, 2), (35, 43)),)  # 2 sink tokens + last 8 positions
    meta = build_metadata([1], [40], [3], kv_ranges=ranges)
    got = ragged_attention(q, k_cache, v_cache, meta, 8**-0.5)
    # Reference: keep only the window positions in the cache, then plain causal attention.
    keep = torch.tensor([0, 1, *range(35, 43)])
    k = k_cache[1][:, keep].repeat_interleave(2, 0)  # [Hq, W, D]
    v = v_cache[1][:, keep].repeat_interleave(2, 0)
    mask = keep[None, :] <= torch.arange(40, 43)[:, None]  # [3, W]
    ref = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(0, 1), k, v, attn_mask=mask, scale=8**-0.5
    ).transpose(0, 1)
    assert (got - ref).abs().max().item() < 1e-5
    full = build_metadata([1], [40], [3], kv_ranges=(((0, 43),),))
    plain = build_metadata([1], [40], [3])
    assert torch.allclose(
        ragged_attention(q, k_cache, v_cache, full, 0.3),
        ragged_attention(q, k_cache, v_cache, plain, 0.3),
        atol=1e-6,
    )


@pytest.fixture(scope="module")
def tiny_llm_factory(tiny_llama: tuple[Path, Any]) -> Any:
    def make(**kw: Any) -> LLM:
        return LLM(str(tiny_llama[0]), max_model_len=128, **kw)

    return make


def test_continuous_batching_and_chunked_prefill_match_alone(tiny_llm_factory: Any) -> None:
    ps = prompts(5, [50, 3, 20, 33, 9], seed=3)
    params = SamplingParams(max_tokens=12, ignore_eos=True)
    batched = tiny_llm_factory(
        max_num_seqs=2, max_num_batched_tokens=16, enable_prefix_caching=False
    ).generate(ps, params)
    alone_llm = tiny_llm_factory(max_num_seqs=1, enable_prefix_caching=False)
    for p, out in zip(ps, batched, strict=True):
        assert len(out.token_ids) == 12 and out.finish_reason == "length"
        assert alone_llm.generate([p], params)[0].token_ids == out.token_ids
    assert max(o.stats.num_prefill_steps for o in batched) >= 4  # the 50-token prompt was chunked


def test_prefix_cache_hit_gives_same_tokens(tiny_llm_factory: Any) -> None:
    shared = prompts(1, [70], seed=5)[0]
    ps = [shared + tail for tail in prompts(4, [3, 7, 1, 12], seed=6)]
    params = SamplingParams(max_tokens=10, ignore_eos=True)
    ref = tiny_llm_factory(max_num_seqs=2, enable_prefix_caching=False).generate(ps, params)
    llm = tiny_llm_factory(max_num_seqs=2, max_num_batched_tokens=64)
    first = llm.generate(ps, params)  # concurrent requests: hits copy from a running slot
    again = llm.generate(ps, params)  # later requests: hits reuse a free slot in place
    for r, a, b in zip(ref, first, again, strict=True):
        assert r.token_ids == a.token_ids == b.token_ids
    assert sum(o.stats.num_cached_tokens for o in first) > 0
    assert all(o.stats.num_cached_tokens == 64 for o in again)


def test_seeded_sampling_is_reproducible_and_batch_independent(tiny_llm_factory: Any) -> None:
    llm = tiny_llm_factory(max_num_seqs=4)
    ps = prompts(3, [6, 11, 4], seed=9)
    sp = SamplingParams(
        max_tokens=15, temperature=1.0, top_k=20, top_p=0.9, seed=123, ignore_eos=True
    )
    together = llm.generate(ps, sp)
    alone = llm.generate([ps[1]], sp)[0]
    assert together[1].token_ids == alone.token_ids
    greedy = llm.generate([ps[0]], SamplingParams(max_tokens=8, ignore_eos=True))[0]
    top1 = llm.generate(
        [ps[0]], SamplingParams(max_tokens=8, temperature=0.7, top_k=1, seed=1, ignore_eos=True)
    )[0]
    assert greedy.token_ids == top1.token_ids


def test_stop_on_eos(tiny_llm_factory: Any) -> None:
    llm = tiny_llm_factory()
    out = llm.generate([[5, 6, 7]], SamplingParams(max_tokens=5, ignore_eos=True))[0]
    eos = out.token_ids[2]  # pretend the third generated token is a stop token
    stopped = llm.generate([[5, 6, 7]], SamplingParams(max_tokens=5, stop_token_ids=(eos,)))[0]
    assert stopped.token_ids == out.token_ids[: out.token_ids.index(eos) + 1]
    assert stopped.finish_reason == "stop"


@pytest.mark.parametrize(
    ("starts", "qlens"),
    [([30, 30, 30], [1, 1, 1]), ([30, 28, 33], [1, 1, 1]), ([30, 28, 33], [4, 4, 4])],
)
def test_dense_path_equals_ragged_path(starts: list[int], qlens: list[int]) -> None:
    torch.manual_seed(1)
    k_cache = torch.randn(5, 2, 64, 8)  # [S, Hkv, L, D]
    v_cache = torch.randn(5, 2, 64, 8)
    q = torch.randn(sum(qlens), 6, 8)  # G = 3
    dense = build_metadata([1, 2, 3], starts, qlens)
    ragged = build_metadata(
        [3, 1, 2], [starts[2], starts[0], starts[1]], [qlens[2], qlens[0], qlens[1]]
    )
    assert dense.dense and not ragged.dense
    got = ragged_attention(q, k_cache, v_cache, dense, 0.35)
    n = qlens[0]
    q_perm = torch.cat([q[2 * n :], q[:n], q[n : 2 * n]])
    ref = ragged_attention(q_perm, k_cache, v_cache, ragged, 0.35)
    ref = torch.cat([ref[n : 2 * n], ref[2 * n :], ref[:n]])
    assert (got - ref).abs().max().item() < 1e-5


def test_batched_window_path_equals_per_sequence_windows() -> None:
    torch.manual_seed(2)
    k_cache = torch.randn(4, 2, 80, 8)  # [S, Hkv, L, D]
    v_cache = torch.randn(4, 2, 80, 8)
    q = torch.randn(3, 6, 8)  # one token each for 3 sequences, G = 3
    starts = [70, 12, 40]
    ranges = (((0, 4), (55, 71)), ((0, 13),), ((0, 4), (25, 41)))  # sinks + window; one short
    batched = build_metadata([2, 0, 3], starts, [1, 1, 1], kv_ranges=ranges)
    assert batched.window_index is not None and batched.window_mask is not None
    got = ragged_attention(q, k_cache, v_cache, batched, 0.3)
    for i, (slot, start) in enumerate(zip([2, 0, 3], starts, strict=True)):
        alone = build_metadata([slot], [start], [2], kv_ranges=(ranges[i],))  # q=2: loop path
        q2 = torch.cat([q[i : i + 1], torch.zeros(1, 6, 8)])
        assert alone.window_index is None
        ref = ragged_attention(q2, k_cache, v_cache, alone, 0.3)[0]
        assert (got[i] - ref).abs().max().item() < 1e-5
