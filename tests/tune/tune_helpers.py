"""Tiny random Llama models on disk for the tune tests (imported by name: tests/tune is on
sys.path). The output layer is scaled up so greedy argmaxes are rarely near-tied."""

from __future__ import annotations

from pathlib import Path


def make_sharp_tiny(path: Path, scale: float = 40.0) -> Path:
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
        model.lm_head.weight.mul_(scale)
    model.save_pretrained(path, safe_serialization=True)
    return path
