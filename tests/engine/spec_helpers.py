"""Helpers for the speculative-decoding engine tests: sharpened tiny models, random schedules,
and the greedy comparison with the near-tie rule."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import torch

from specsched.engine import LLM, KVCache, SamplingParams, build_metadata
from specsched.schedule import Schedule, parse_schedule

NEAR_TIE = 1e-4  # top-2 logit gap below which batched vs one-token reduction order may flip


def make_sharp_pair(root: Path, make_tiny_hf: Any, scale: float = 40.0) -> tuple[Path, Path]:
    """A tiny random Llama target with a scaled-up output layer (sharp, rarely tied logits) and a
    1-layer draft sharing its embeddings, first layer and output layer (same vocab, correlated)."""
    import transformers

    target_dir, draft_dir = root / "target", root / "draft"
    target = make_tiny_hf(target_dir, "llama", max_position_embeddings=512)
    with torch.no_grad():
        target.lm_head.weight.mul_(scale)
    target.save_pretrained(target_dir, safe_serialization=True)
    cfg = transformers.LlamaConfig(**{**target.config.to_dict(), "num_hidden_layers": 1})
    draft = transformers.LlamaForCausalLM(cfg).float().eval()
    draft.load_state_dict(target.state_dict(), strict=False)
    draft.save_pretrained(draft_dir, safe_serialization=True)
    return target_dir, draft_dir


def mixed_prompts(n: int, seed: int, vocab: int = 128) -> list[list[int]]:
    """Prompts of mixed lengths; every other one repeats a short motif (n-gram lookup hits)."""
    rng = random.Random(seed)
    out: list[list[int]] = []
    for i in range(n):
        length = rng.choice([3, 9, 17, 30, 47, 64])
        if i % 2:
            motif = [rng.randrange(2, vocab) for _ in range(rng.randint(2, 5))]
            out.append((motif * length)[:length])
        else:
            out.append([rng.randrange(2, vocab) for _ in range(length)])
    return out


def random_schedule(rng: random.Random, max_k: int = 8) -> Schedule:
    """Static, batch-only (3-item) or 5-item schedule with context boundaries inside 10..100."""
    kind = rng.choice(["static", "batch", "grid"])
    if kind == "static":
        return parse_schedule([[1, 1, rng.randint(0, max_k)]])
    cuts = sorted(rng.sample(range(2, 5), rng.randint(1, 2)))
    bounds = [1, *cuts]
    batch_ranges = [(lo, hi - 1) for lo, hi in zip(bounds, [*cuts, 9], strict=True)]
    if kind == "batch":
        return parse_schedule([[lo, hi, rng.randint(0, max_k)] for lo, hi in batch_ranges])
    ctx_cuts = sorted(rng.sample(range(10, 100), 2))
    ctx_ranges = [(1, ctx_cuts[0] - 1), (ctx_cuts[0], ctx_cuts[1] - 1), (ctx_cuts[1], 10**6)]
    return parse_schedule(
        [
            [b0, b1, c0, c1, rng.randint(0, max_k)]
            for b0, b1 in batch_ranges
            for c0, c1 in ctx_ranges
        ]
    )


def top2_gap(llm: LLM, tokens: list[int]) -> float:
    """Target top-2 logit gap for the next token after `tokens` (fresh no-spec forward)."""
    eng = llm.engine
    kv = KVCache(eng.model_cfg, 1, len(tokens) + 1, torch.float32, "cpu")  # never the live cache
    ids = torch.tensor(tokens)
    meta = build_metadata([0], [0], [len(tokens)])
    logits = eng.model(ids, meta, kv, ids.new_tensor([len(tokens) - 1]))  # [1, V]
    top = logits[0].topk(2).values
    return float(top[0] - top[1])


def assert_greedy_equal(
    ref_llm: LLM, prompts: list[list[int]], ref: list[list[int]], got: list[list[int]]
) -> list[float]:
    """Token-for-token equality; a divergence passes only at a genuine near-tie of the target
    (top-2 gap < NEAR_TIE at the first differing position). Returns the gaps found."""
    gaps: list[float] = []
    for prompt, r, g in zip(prompts, ref, got, strict=True):
        if r == g:
            continue
        j = next((i for i, (a, b) in enumerate(zip(r, g, strict=False)) if a != b), None)
        assert j is not None, f"same prefix, different lengths: {r} vs {g}"
        gap = top2_gap(ref_llm, prompt + r[:j])
        print(f"divergence at output position {j}: target top-2 gap {gap:.3g}")
        assert gap < NEAR_TIE, f"spec output differs at {j} (gap {gap:.3g}): {r} vs {g}"
        gaps.append(gap)
    return gaps


def greedy(max_tokens: int) -> SamplingParams:
    return SamplingParams(max_tokens=max_tokens, ignore_eos=True)
