"""Fixtures shared by several test folders."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def sharp_tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama (HF directory) whose output layer is scaled x40, so greedy argmaxes
    are rarely near-tied. Built once per session; tests must treat it as read-only."""
    import torch
    import transformers

    cfg = transformers.LlamaConfig(
        vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False, eos_token_id=1,
        bos_token_id=0,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).float().eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(40.0)
    path = tmp_path_factory.mktemp("sharp_tiny") / "model"
    model.save_pretrained(path, safe_serialization=True)
    return path
