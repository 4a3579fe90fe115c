"""Built-in hardware and model specs for the roofline model, and custom JSON specs.

Hardware figures are vendor datasheet peaks: HBM bandwidth and dense (non-sparse) BF16 tensor
TFLOPS. Model shapes are from each model's published `config.json`.
A custom hardware JSON uses `HardwareSpec` field names; a custom model JSON uses `ModelSpec` field
names or a Hugging Face `config.json` (num_hidden_layers, num_attention_heads, ...).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from specsched.errors import UserError
from specsched.io import MiB, dataclass_from_mapping, parse_json_text, read_user_text
from specsched.planner.roofline import HardwareSpec, ModelSpec


def builtin_hardware() -> dict[str, HardwareSpec]:
    return {
        "H100-SXM": HardwareSpec(
            "H100-SXM", mem_bandwidth_gbps=3350, peak_tflops=989, memory_gb=80
        ),
        "H200": HardwareSpec("H200", mem_bandwidth_gbps=4800, peak_tflops=989, memory_gb=141),
        "A100-80GB": HardwareSpec(
            "A100-80GB", mem_bandwidth_gbps=2039, peak_tflops=312, memory_gb=80
        ),
        "L40S": HardwareSpec("L40S", mem_bandwidth_gbps=864, peak_tflops=362, memory_gb=48),
    }


def builtin_models() -> dict[str, ModelSpec]:
    return {
        "llama-3.1-8b": ModelSpec("llama-3.1-8b", 32, 4096, 14336, 32, 8, 128, 128256),
        "llama-3.1-70b": ModelSpec("llama-3.1-70b", 80, 8192, 28672, 64, 8, 128, 128256),
        "qwen2.5-7b": ModelSpec("qwen2.5-7b", 28, 3584, 18944, 28, 4, 128, 152064),
        "smollm2-135m": ModelSpec("smollm2-135m", 30, 576, 1536, 9, 3, 64, 49152, True),
    }


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9.]", "", name.lower())


_HW_ALIASES = {"h100": "H100-SXM", "a100": "A100-80GB", "a10080g": "A100-80GB"}
_DTYPE_BYTES = {"bfloat16": 2.0, "float16": 2.0, "float32": 4.0, "fp8": 1.0, "float8": 1.0}


def _read_json(path: Path, what: str) -> dict[str, Any]:
    obj = parse_json_text(read_user_text(path, f"{what} spec", MiB), str(path))
    if not isinstance(obj, dict):
        raise UserError(f"{path}: a {what} spec must be a JSON object")
    return obj


def resolve_hardware(name_or_path: str) -> HardwareSpec:
    """A built-in name (H100-SXM, H200, A100-80GB, L40S; case-insensitive) or a JSON file."""
    table = builtin_hardware()
    key = _norm(name_or_path)
    for name, spec in table.items():
        if _norm(name) == key:
            return spec
    if key in _HW_ALIASES:
        return table[_HW_ALIASES[key]]
    path = Path(name_or_path)
    if path.suffix.lower() == ".json" or path.exists():
        obj = _read_json(path, "hardware")
        obj.setdefault("name", path.stem)
        return dataclass_from_mapping(HardwareSpec, obj, str(path))
    raise UserError(
        f"unknown GPU {name_or_path!r}; built-in: {', '.join(table)}; or give a JSON file with "
        f"name, mem_bandwidth_gbps, peak_tflops"
    )


def model_from_hf_config(obj: dict[str, Any], name: str) -> ModelSpec:
    """A ModelSpec from a Hugging Face config.json (Llama/Qwen2/SmolLM style keys)."""
    try:
        heads = int(obj["num_attention_heads"])
        hidden = int(obj["hidden_size"])
        return ModelSpec(
            name=str(obj.get("_name_or_path") or name),
            num_layers=int(obj["num_hidden_layers"]),
            hidden_size=hidden,
            intermediate_size=int(obj["intermediate_size"]),
            num_heads=heads,
            num_kv_heads=int(obj.get("num_key_value_heads") or heads),
            head_dim=int(obj.get("head_dim") or hidden // heads),
            vocab_size=int(obj["vocab_size"]),
            tie_word_embeddings=bool(obj.get("tie_word_embeddings", False)),
            weight_bytes=_DTYPE_BYTES.get(str(obj.get("torch_dtype", "bfloat16")), 2.0),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(f"{name}: not a usable config.json (missing or bad key {exc})") from None


def resolve_model(name_or_path: str) -> ModelSpec:
    """A built-in preset name or a JSON file (ModelSpec fields or a Hugging Face config.json)."""
    table = builtin_models()
    key = _norm(name_or_path)
    for name, spec in table.items():
        if _norm(name) == key:
            return spec
    path = Path(name_or_path)
    if path.suffix.lower() == ".json" or path.exists():
        obj = _read_json(path, "model")
        if "num_hidden_layers" in obj:
            return model_from_hf_config(obj, path.stem)
        obj.setdefault("name", path.stem)
        return dataclass_from_mapping(ModelSpec, obj, str(path))
    raise UserError(
        f"unknown model {name_or_path!r}; built-in: {', '.join(table)}; or give a JSON file "
        f"(ModelSpec fields or a Hugging Face config.json)"
    )
