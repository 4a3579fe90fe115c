"""Load a llama-architecture GGUF file: metadata -> ModelConfig, tensors dequantized to HF names.

llama.cpp's converter permutes the rows of q/k projections (interleaved RoPE pairs); we undo
that permute so the weights work with the HF "rotate_half" RoPE and match transformers.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from specsched.engine.config import ModelConfig, RopeScaling
from specsched.errors import UserError

if TYPE_CHECKING:
    from gguf import GGUFReader

SUPPORTED_GGUF_ARCHITECTURES: tuple[str, ...] = ("llama", "qwen2")

_LAYER_NAMES: dict[str, str] = {
    "attn_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_q.bias": "self_attn.q_proj.bias",
    "attn_k.bias": "self_attn.k_proj.bias",
    "attn_v.bias": "self_attn.v_proj.bias",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}


def open_gguf(path: Path) -> GGUFReader:
    """A `gguf.GGUFReader`, or a one-line UserError for a missing or corrupt file."""
    import gguf

    if not path.is_file():
        raise UserError(f"{path}: no such GGUF file")
    try:
        return gguf.GGUFReader(str(path))
    except Exception as exc:  # the reader raises ValueError/struct errors/... on bad bytes
        raise UserError(f"{path}: not a readable GGUF file ({type(exc).__name__}: {exc})") from None


def field(reader: GGUFReader, key: str, default: Any = None) -> Any:
    f = reader.fields.get(key)
    if f is None:
        return default
    return f.contents()


def unpermute_qk(w: np.ndarray, n_head: int) -> np.ndarray:
    """Inverse of llama.cpp convert_hf_to_gguf `permute`.

    The converter reorders each head's rows from [2, d/2] (rotate_half pairs) to [d/2, 2]
    (interleaved pairs); we swap them back.
    """
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def config_from_gguf(reader: GGUFReader, path: Path) -> ModelConfig:
    arch = field(reader, "general.architecture")
    if arch not in SUPPORTED_GGUF_ARCHITECTURES:
        raise UserError(
            f"{path}: unsupported GGUF architecture {arch!r}; supported: "
            f"{', '.join(SUPPORTED_GGUF_ARCHITECTURES)}"
        )
    heads = int(field(reader, f"{arch}.attention.head_count"))
    hidden = int(field(reader, f"{arch}.embedding_length"))
    head_dim = int(field(reader, f"{arch}.rope.dimension_count", hidden // heads))
    scaling = None
    scaling_type = field(reader, f"{arch}.rope.scaling.type")
    if scaling_type == "linear":
        scaling = RopeScaling("linear", float(field(reader, f"{arch}.rope.scaling.factor")))
    elif scaling_type not in (None, "none"):
        raise UserError(f"{path}: unsupported GGUF rope scaling {scaling_type!r}")
    tensor_names = {t.name for t in reader.tensors}
    vocab = field(reader, f"{arch}.vocab_size")
    if vocab is None:
        vocab = len(reader.fields["tokenizer.ggml.tokens"].data)
    eos = field(reader, "tokenizer.ggml.eos_token_id")
    return ModelConfig(
        vocab_size=int(vocab),
        hidden_size=hidden,
        intermediate_size=int(field(reader, f"{arch}.feed_forward_length")),
        num_layers=int(field(reader, f"{arch}.block_count")),
        num_heads=heads,
        num_kv_heads=int(field(reader, f"{arch}.attention.head_count_kv", heads)),
        head_dim=head_dim,
        rms_norm_eps=float(field(reader, f"{arch}.attention.layer_norm_rms_epsilon", 1e-5)),
        rope_theta=float(field(reader, f"{arch}.rope.freq_base", 10000.0)),
        rope_scaling=scaling,
        max_position_embeddings=int(field(reader, f"{arch}.context_length", 2048)),
        tie_word_embeddings="output.weight" not in tensor_names,
        attention_bias="blk.0.attn_q.bias" in tensor_names,
        bos_token_id=field(reader, "tokenizer.ggml.bos_token_id"),
        eos_token_ids=() if eos is None else (int(eos),),
    )


def load_gguf(path: Path) -> tuple[ModelConfig, dict[str, torch.Tensor], Any]:
    """Config, float32 weights in HF naming, and the reader (for the tokenizer metadata)."""
    from gguf.quants import dequantize

    reader = open_gguf(path)
    cfg = config_from_gguf(reader, path)
    arch = field(reader, "general.architecture")
    weights: dict[str, torch.Tensor] = {}
    try:
        for t in reader.tensors:
            data = dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
            data = data.reshape([int(d) for d in reversed(t.shape)])  # GGUF shape is reversed
            name = t.name
            if name == "token_embd.weight":
                hf_name = "model.embed_tokens.weight"
            elif name == "output_norm.weight":
                hf_name = "model.norm.weight"
            elif name == "output.weight":
                hf_name = "lm_head.weight"
            elif name.startswith("blk."):
                _, idx, rest = name.split(".", 2)
                if rest not in _LAYER_NAMES:
                    continue  # e.g. rope_freqs; unused
                hf_name = f"model.layers.{idx}.{_LAYER_NAMES[rest]}"
                if arch == "llama" and rest.startswith("attn_q."):
                    data = unpermute_qk(data, cfg.num_heads)
                elif arch == "llama" and rest.startswith("attn_k."):
                    data = unpermute_qk(data, cfg.num_kv_heads)
            else:
                continue
            weights[hf_name] = torch.from_numpy(np.array(data, dtype=np.float32, order="C"))
    except (ValueError, NotImplementedError, KeyError) as exc:
        raise UserError(f"{path}: cannot dequantize GGUF tensors ({exc})") from None
    expected = 3 + 9 * cfg.num_layers - (1 if cfg.tie_word_embeddings else 0)
    if len(weights) < expected:
        raise UserError(f"{path}: GGUF is missing tensors ({len(weights)} of {expected} found)")
    return cfg, weights, reader
