"""Greedy outputs recorded before the K-policy redesign (issue 12) must not change.

`data/greedy_golden.json` holds token ids produced by the engine when this test was written:
a tiny Llama whose weights come from torch's seeded RNG (no transformers init, so the weights
depend only on the pinned torch) under every drafter and several K policies, and SmolLM2 on three
prompts. A refactor that changes any of them fails here. Only a genuine fp32 near-tie of the
target (top-2 logit gap < NEAR_TIE at the first differing position) may flip a token, as between
CPUs whose kernels sum in another order; the rest of the sequence is then not compared.

Regenerate (only for an intended change, and say why in the commit):
    .venv/bin/python tests/engine/test_greedy_golden.py --write
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from specsched.engine import LLM, SamplingParams

GOLDEN = Path(__file__).parent / "data" / "greedy_golden.json"
NEAR_TIE = 1e-4
TINY = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2)


def write_tiny_model(path: Path, num_layers: int = 2, seed: int = 0) -> Path:
    """An HF directory (config.json + model.safetensors) with seeded random weights."""
    from safetensors.torch import save_file

    c = dict(TINY, num_hidden_layers=num_layers)
    h, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    d = h // c["num_attention_heads"]
    kv = c["num_key_value_heads"] * d
    gen = torch.Generator().manual_seed(seed)

    def w(*shape: int, scale: float = 0.08) -> torch.Tensor:
        return (torch.randn(*shape, generator=gen) * scale).contiguous()

    weights = {"model.embed_tokens.weight": w(v, h, scale=1.0),
               "model.norm.weight": torch.ones(h), "lm_head.weight": w(v, h, scale=2.0)}
    for n in range(num_layers):
        p = f"model.layers.{n}"
        weights.update({
            f"{p}.self_attn.q_proj.weight": w(h, h), f"{p}.self_attn.k_proj.weight": w(kv, h),
            f"{p}.self_attn.v_proj.weight": w(kv, h), f"{p}.self_attn.o_proj.weight": w(h, h),
            f"{p}.mlp.gate_proj.weight": w(i, h), f"{p}.mlp.up_proj.weight": w(i, h),
            f"{p}.mlp.down_proj.weight": w(h, i),
            f"{p}.input_layernorm.weight": torch.ones(h),
            f"{p}.post_attention_layernorm.weight": torch.ones(h),
        })
    path.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(path / "model.safetensors"))
    config = dict(c, architectures=["LlamaForCausalLM"], max_position_embeddings=512,
                  rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
                  eos_token_id=1, bos_token_id=0)
    (path / "config.json").write_text(json.dumps(config))
    return path


def tiny_prompts() -> list[list[int]]:
    """Mixed lengths; odd prompts repeat a motif (n-gram hits)."""
    gen = torch.Generator().manual_seed(1)
    out = []
    for n, length in enumerate([5, 23, 40, 9, 64, 17, 31, 3]):
        if n % 2:
            motif = torch.randint(2, 128, (4,), generator=gen).tolist()
            out.append((motif * length)[:length])
        else:
            out.append(torch.randint(2, 128, (length,), generator=gen).tolist())
    return out


def tiny_configs(draft_dir: Path) -> dict[str, dict[str, Any]]:
    """name -> keyword arguments of `speculative_config` below."""
    grid = [[1, 2, 1, 30, 1], [1, 2, 31, 1000000, 3], [3, 8, 1, 30, 0], [3, 8, 31, 1000000, 2]]
    return {
        "none": {"drafter": "none"},
        "streaming-k2": {"drafter": "streaming", "k": 2, "window": 8, "sinks": 2},
        "ngram-k3": {"drafter": "ngram", "k": 3},
        "model-k2": {"drafter": "model", "draft": str(draft_dir), "k": 2},
        "streaming-grid": {"drafter": "streaming", "grid": grid, "window": 8, "sinks": 2},
        "ngram-grid-per-request": {"drafter": "ngram", "grid": grid, "per_request": True},
        "model-grid-max": {"drafter": "model", "draft": str(draft_dir), "grid": grid,
                           "agg": "max"},
    }


def speculative_config(spec: dict[str, Any]) -> Any:
    """Build the engine's speculative config from a plain description (API-neutral)."""
    from specsched.engine import SpeculativeConfig
    from specsched.policy import CtxAgg, PolicyConfig
    from specsched.schedule import Schedule, parse_schedule

    if spec["drafter"] == "none":
        return None
    schedule = parse_schedule(spec["grid"]) if "grid" in spec else Schedule.constant(spec["k"])
    drafter = f"model:{spec['draft']}" if spec["drafter"] == "model" else spec["drafter"]
    policy = PolicyConfig(schedule=schedule, ctx_agg=CtxAgg(spec.get("agg", "mean")),
                          per_request_k=spec.get("per_request", False))
    return SpeculativeConfig.from_flags(drafter, policy, window=spec.get("window", 256),
                                        num_sink_tokens=spec.get("sinks", 4))


SMOL_PROMPTS = ["What is the capital of France?", "Write a haiku about the sea.",
                "List three prime numbers."]
SMOL_CONFIGS: dict[str, dict[str, Any]] = {
    "none": {"drafter": "none"},
    "streaming-k3": {"drafter": "streaming", "k": 3, "window": 16},
    "ngram-k2": {"drafter": "ngram", "k": 2},
}


def run_tiny(root: Path) -> dict[str, list[list[int]]]:
    target, draft = write_tiny_model(root / "target"), write_tiny_model(root / "draft", 1, 0)
    out: dict[str, list[list[int]]] = {}
    prompts = tiny_prompts()
    for name, spec in tiny_configs(draft).items():
        llm = LLM(str(target), max_num_seqs=8, max_model_len=256, num_threads=1,
                  speculative=speculative_config(spec))
        res = llm.generate(prompts, SamplingParams(max_tokens=24, ignore_eos=True))
        out[name] = [o.token_ids for o in res]
    return out


def run_smollm2() -> dict[str, list[list[int]]]:
    out: dict[str, list[list[int]]] = {}
    for name, spec in SMOL_CONFIGS.items():
        llm = LLM("smollm2-135m", max_num_seqs=3, max_model_len=256, num_threads=1,
                  speculative=speculative_config(spec))
        res = llm.generate(SMOL_PROMPTS, SamplingParams(max_tokens=20), use_chat_template=True)
        out[name] = [o.token_ids for o in res]
    return out


def _gap(llm: LLM, tokens: list[int]) -> float:
    from specsched.engine import KVCache, build_metadata

    eng = llm.engine
    kv = KVCache(eng.model_cfg, 1, len(tokens) + 1, torch.float32, "cpu")
    ids = torch.tensor(tokens)
    logits = eng.model(ids, build_metadata([0], [0], [len(tokens)]), kv,
                       ids.new_tensor([len(tokens) - 1]))
    top = logits[0].topk(2).values
    return float(top[0] - top[1])


def _compare(ref_llm: LLM, prompts: list[list[int]], want: list[list[int]],
             got: list[list[int]], what: str) -> None:
    for prompt, w, g in zip(prompts, want, got, strict=True):
        if w == g:
            continue
        j = next((i for i, (a, b) in enumerate(zip(w, g, strict=False)) if a != b), None)
        assert j is not None, f"{what}: same prefix, different lengths: {w} vs {g}"
        gap = _gap(ref_llm, prompt + w[:j])
        assert gap < NEAR_TIE, f"{what}: output changed at {j} (gap {gap:.3g}): {w} vs {g}"


def test_tiny_model_greedy_outputs_unchanged(tmp_path: Path) -> None:
    want = json.loads(GOLDEN.read_text())["tiny"]
    got = run_tiny(tmp_path)
    assert set(got) == set(want)
    ref = LLM(str(tmp_path / "target"), max_num_seqs=1, max_model_len=256, num_threads=1)
    for name in want:
        _compare(ref, tiny_prompts(), want[name], got[name], f"tiny/{name}")


@pytest.mark.smollm2
def test_smollm2_greedy_outputs_unchanged() -> None:
    want = json.loads(GOLDEN.read_text())["smollm2"]
    got = run_smollm2()
    assert set(got) == set(want)
    ref = LLM("smollm2-135m", max_num_seqs=1, max_model_len=256, num_threads=1)
    prompts = [ref.encode_prompt(p, use_chat_template=True) for p in SMOL_PROMPTS]
    for name in want:
        _compare(ref, prompts, want[name], got[name], f"smollm2/{name}")


if __name__ == "__main__" and "--write" in sys.argv:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        data = {"tiny": run_tiny(Path(tmp)), "smollm2": run_smollm2()}
    GOLDEN.write_text(json.dumps(data, indent=None, separators=(",", ":")) + "\n")
    print(f"wrote {GOLDEN}")
