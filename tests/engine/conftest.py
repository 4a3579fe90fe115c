"""Shared fixtures: tiny random HF models saved to disk, and the SmolLM2 default (session-wide)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch


def make_tiny_hf(path: Path, arch: str, **overrides: Any) -> Any:
    """Save a tiny random transformers model (fp32 safetensors) to `path`; return it."""
    import transformers

    common: dict[str, Any] = dict(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=False,
        eos_token_id=1,
        bos_token_id=0,
    )
    common.update(overrides)
    torch.manual_seed(0)
    if arch == "llama":
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**common))
    elif arch == "qwen2":
        model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**common))
    else:
        raise ValueError(arch)
    model = model.float().eval()
    model.save_pretrained(path, safe_serialization=True)
    return model


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    path = tmp_path_factory.mktemp("tiny_llama")
    return path, make_tiny_hf(path, "llama")


@pytest.fixture(scope="session")
def smollm2_llm() -> Any:
    from specsched.engine import LLM

    return LLM("smollm2-135m", max_num_seqs=4, max_model_len=512, num_threads=1)


@pytest.fixture(scope="session")
def tiny_hf_factory() -> Any:
    """`make_tiny_hf` as a fixture, so test modules need not import conftest."""
    return make_tiny_hf
