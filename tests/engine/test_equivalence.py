"""Our model's logits equal transformers' for the same weights (fp32, max abs diff < 1e-4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from specsched.engine.layers.attention import build_metadata
from specsched.engine.layers.kv_cache import KVCache
from specsched.engine.layers.model import LlamaModel
from specsched.engine.loading.hf import load_hf_dir

TOL = 1e-4


def ours(path: Path, max_len: int = 128, slots: int = 4) -> tuple[LlamaModel, KVCache]:
    cfg, weights = load_hf_dir(path)
    model = LlamaModel(cfg, weights, max_len, torch.float32, "cpu")
    return model, KVCache(cfg, slots, max_len, torch.float32, "cpu")


def hf_logits(ref: Any, ids: list[int]) -> torch.Tensor:  # [S, V]
    with torch.no_grad():
        return ref(torch.tensor([ids])).logits[0].float()


def check_ragged(path: Path, ref: Any) -> None:
    """Prefill ragged chunks, then a ragged step with different context and q per sequence."""
    model, kv = ours(path)
    g = torch.Generator().manual_seed(1)
    seqs = [torch.randint(2, 128, (n,), generator=g).tolist() for n in (23, 7, 40)]
    # step 1: ragged prefill of the first part of each sequence
    first = [10, 3, 33]
    meta = build_metadata([2, 0, 1], [0, 0, 0], first)
    ids = torch.tensor([t for s, n in zip(seqs, first, strict=True) for t in s[:n]])
    logits = model(ids, meta, kv)  # [T, V]
    off = 0
    for s, n in zip(seqs, first, strict=True):
        ref_l = hf_logits(ref, s[:n])
        assert (logits[off : off + n] - ref_l).abs().max().item() < TOL
        off += n
    # step 2: incremental, q differs per sequence (decode, verify-like, chunk)
    rest = [len(s) - n for s, n in zip(seqs, first, strict=True)]  # 13, 4, 7
    meta = build_metadata([2, 0, 1], first, rest)
    ids = torch.tensor([t for s, n in zip(seqs, first, strict=True) for t in s[n:]])
    logits = model(ids, meta, kv)
    off = 0
    for s, n, r in zip(seqs, first, rest, strict=True):
        ref_l = hf_logits(ref, s)[n:]
        assert (logits[off : off + r] - ref_l).abs().max().item() < TOL
        off += r


def test_llama_prefill_matches_transformers(tiny_llama: tuple[Path, Any]) -> None:
    path, ref = tiny_llama
    model, kv = ours(path)
    ids = list(range(5, 60))
    logits = model(torch.tensor(ids), build_metadata([0], [0], [len(ids)]), kv)
    assert logits.shape == (len(ids), 128)
    assert (logits - hf_logits(ref, ids)).abs().max().item() < TOL


def test_llama_ragged_incremental_matches_transformers(tiny_llama: tuple[Path, Any]) -> None:
    check_ragged(*tiny_llama)


@pytest.mark.parametrize(
    ("arch", "overrides"),
    [
        ("qwen2", {"tie_word_embeddings": True}),
        (
            "llama",
            {
                "rope_scaling": {
                    "rope_type": "llama3",
                    "factor": 8.0,
                    "low_freq_factor": 1.0,
                    "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 32,
                }
            },
        ),
        ("llama", {"num_key_value_heads": 4, "head_dim": 32, "attention_bias": True}),
    ],
)
def test_variants_match_transformers(
    tmp_path: Path, arch: str, overrides: dict[str, Any], tiny_hf_factory: Any
) -> None:
    ref = tiny_hf_factory(tmp_path, arch, **overrides)
    check_ragged(tmp_path, ref)


def test_logits_indices_select_rows(tiny_llama: tuple[Path, Any]) -> None:
    path, _ = tiny_llama
    model, kv = ours(path)
    ids = torch.arange(3, 20)
    meta = build_metadata([1, 3], [0, 0], [10, 7])
    full = model(ids, meta, kv)
    model2, kv2 = ours(path)
    picked = model2(ids, meta, kv2, torch.tensor([9, 16]))
    assert torch.allclose(picked, full[[9, 16]], atol=1e-5)
