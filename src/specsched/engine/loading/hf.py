"""Load a Hugging Face model directory: config.json + *.safetensors (+ tokenizer.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from specsched.engine.config import ModelConfig, RopeScaling
from specsched.errors import UserError

SUPPORTED_ARCHITECTURES: tuple[str, ...] = (
    "LlamaForCausalLM",
    "Qwen2ForCausalLM",
    "MistralForCausalLM",
)


def _eos_ids(value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    if isinstance(value, int):
        return (value,)
    return tuple(int(v) for v in value)


def config_from_hf(raw: dict[str, Any]) -> ModelConfig:
    """Translate an HF config.json dict; unsupported architectures are a UserError."""
    archs = raw.get("architectures") or []
    arch = archs[0] if archs else ""
    if arch not in SUPPORTED_ARCHITECTURES:
        raise UserError(
            f"unsupported architecture {arch or '(none)'!r}; supported: "
            f"{', '.join(SUPPORTED_ARCHITECTURES)}"
        )
    if arch == "MistralForCausalLM" and raw.get("sliding_window"):
        raise UserError("Mistral with sliding_window attention is not supported")
    scaling = None
    # transformers < 5 writes rope_scaling (+ rope_theta); >= 5 writes rope_parameters.
    rs = raw.get("rope_scaling") or raw.get("rope_parameters") or None
    rope_theta = float(raw.get("rope_theta", 10000.0))
    if rs is not None:
        rope_type = rs.get("rope_type", rs.get("type", "default"))
        rope_theta = float(rs.get("rope_theta", rope_theta))
        if rope_type != "default":
            scaling = RopeScaling(
                rope_type=rope_type,
                factor=float(rs.get("factor", 1.0)),
                low_freq_factor=float(rs.get("low_freq_factor", 1.0)),
                high_freq_factor=float(rs.get("high_freq_factor", 4.0)),
                original_max_position_embeddings=int(
                    rs.get("original_max_position_embeddings", 8192)
                ),
            )
    heads = int(raw["num_attention_heads"])
    hidden = int(raw["hidden_size"])
    return ModelConfig(
        vocab_size=int(raw["vocab_size"]),
        hidden_size=hidden,
        intermediate_size=int(raw["intermediate_size"]),
        num_layers=int(raw["num_hidden_layers"]),
        num_heads=heads,
        num_kv_heads=int(raw.get("num_key_value_heads") or heads),
        head_dim=int(raw.get("head_dim") or hidden // heads),
        rms_norm_eps=float(raw.get("rms_norm_eps", 1e-6)),
        rope_theta=rope_theta,
        rope_scaling=scaling,
        max_position_embeddings=int(raw.get("max_position_embeddings", 2048)),
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
        attention_bias=arch == "Qwen2ForCausalLM" or bool(raw.get("attention_bias", False)),
        bos_token_id=raw.get("bos_token_id"),
        eos_token_ids=_eos_ids(raw.get("eos_token_id")),
    )


def load_hf_dir(path: Path) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
    """Read config and all safetensors shards (weights stay in their stored dtype)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    config_path = path / "config.json"
    if not config_path.is_file():
        raise UserError(f"{path}: no config.json; pass a Hugging Face model directory or a .gguf")
    try:
        raw = json.loads(config_path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{config_path}: not valid JSON ({exc})") from None
    cfg = config_from_hf(raw)
    shards = sorted(path.glob("*.safetensors"))
    if not shards:
        raise UserError(f"{path}: no *.safetensors files (only safetensors weights are supported)")
    weights: dict[str, torch.Tensor] = {}
    for shard in shards:
        try:
            weights.update(load_file(str(shard)))
        except (SafetensorError, OSError) as exc:
            raise UserError(f"{shard}: cannot read safetensors ({exc})") from None
    if "lm_head.weight" not in weights and not cfg.tie_word_embeddings:
        raise UserError(f"{path}: lm_head.weight missing and tie_word_embeddings is false")
    return cfg, weights
