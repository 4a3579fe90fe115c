"""Llama-family decoder (SmolLM2, Llama 2/3.x, Qwen2) over a ragged batch of new tokens.

Weights arrive in Hugging Face naming (`model.layers.0.self_attn.q_proj.weight`, ...) and are
fused at load time: q/k/v into one `qkv` matrix, gate/up into one `gate_up` matrix, so a layer is
four matmuls. On CPU fp32 the matmuls go through oneDNN's linear, ~2x faster than `x @ W.T` for
the few-row shapes of decode and verify.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from specsched.engine.attention import AttentionMetadata, ragged_attention, write_kv
from specsched.engine.config import ModelConfig
from specsched.engine.kv_cache import KVCache
from specsched.engine.rope import RotaryTable, apply_rotary


def linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """`x @ w.T + b` for 2-D x, via oneDNN on CPU fp32 (faster for few rows), else F.linear."""
    if x.device.type == "cpu" and x.dtype == torch.float32 and torch.backends.mkldnn.is_available():
        return torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], "")
    return F.linear(x, w, b)


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig, weights: dict[str, torch.Tensor], prefix: str) -> None:
        super().__init__()
        self.cfg = cfg
        att = f"{prefix}.self_attn"
        self.qkv_w = torch.cat([weights[f"{att}.{n}_proj.weight"] for n in "qkv"])  # [Q+2K, H]
        self.qkv_b: torch.Tensor | None = None
        if cfg.attention_bias:
            self.qkv_b = torch.cat([weights[f"{att}.{n}_proj.bias"] for n in "qkv"])  # [Q+2K]
        self.o_w = weights[f"{att}.o_proj.weight"]  # [H, Q]
        mlp = f"{prefix}.mlp"
        self.gate_up_w = torch.cat(
            [weights[f"{mlp}.gate_proj.weight"], weights[f"{mlp}.up_proj.weight"]]
        )  # [2I, H]
        self.down_w = weights[f"{mlp}.down_proj.weight"]  # [H, I]
        self.input_norm = weights[f"{prefix}.input_layernorm.weight"]  # [H]
        self.post_norm = weights[f"{prefix}.post_attention_layernorm.weight"]  # [H]
        self.scale = cfg.head_dim**-0.5

    def forward(
        self,
        h: torch.Tensor,  # [T, H]
        cos: torch.Tensor,  # [T, 1, D/2]
        sin: torch.Tensor,  # [T, 1, D/2]
        k_cache: torch.Tensor,  # [S, Hkv, L, D]
        v_cache: torch.Tensor,  # [S, Hkv, L, D]
        meta: AttentionMetadata,
    ) -> torch.Tensor:  # [T, H]
        cfg = self.cfg
        t = h.shape[0]
        x = F.rms_norm(h, (cfg.hidden_size,), self.input_norm, cfg.rms_norm_eps)
        qkv = linear(x, self.qkv_w, self.qkv_b)  # [T, Q+2K]
        q, k, v = qkv.split([cfg.q_size, cfg.kv_size, cfg.kv_size], dim=-1)
        q = apply_rotary(q.view(t, cfg.num_heads, cfg.head_dim), cos, sin)  # [T, Hq, D]
        k = apply_rotary(k.view(t, cfg.num_kv_heads, cfg.head_dim), cos, sin)  # [T, Hkv, D]
        write_kv(k_cache, v_cache, k, v.view(t, cfg.num_kv_heads, cfg.head_dim), meta)
        o = ragged_attention(q, k_cache, v_cache, meta, self.scale)  # [T, Hq, D]
        h = h + linear(o.view(t, cfg.q_size), self.o_w)
        x = F.rms_norm(h, (cfg.hidden_size,), self.post_norm, cfg.rms_norm_eps)
        gate, up = linear(x, self.gate_up_w).chunk(2, dim=-1)  # 2 x [T, I]
        return h + linear(F.silu(gate) * up, self.down_w)


class LlamaModel(nn.Module):
    """The decoder; `forward` runs one ragged batch and returns logits for the chosen tokens."""

    def __init__(
        self,
        cfg: ModelConfig,
        weights: dict[str, torch.Tensor],
        max_model_len: int,
        dtype: torch.dtype,
        device: torch.device | str,
    ) -> None:
        super().__init__()
        self.cfg = cfg
        w = {name: t.to(device=device, dtype=dtype).contiguous() for name, t in weights.items()}
        self.embed = w["model.embed_tokens.weight"]  # [V, H]
        self.layers = nn.ModuleList(
            DecoderLayer(cfg, w, f"model.layers.{i}") for i in range(cfg.num_layers)
        )
        self.norm = w["model.norm.weight"]  # [H]
        self.lm_head = self.embed if cfg.tie_word_embeddings else w["lm_head.weight"]  # [V, H]
        self.rope = RotaryTable(cfg, max_model_len, device)
        self.dtype = dtype

    @torch.inference_mode()
    def forward(
        self,
        input_ids: torch.Tensor,  # [T] int64, new tokens of all sequences, sequence-major
        meta: AttentionMetadata,
        kv: KVCache,
        logits_indices: torch.Tensor | None = None,  # [N] rows of T to return; None = all
    ) -> torch.Tensor:  # [N, V] float32
        h = F.embedding(input_ids, self.embed)  # [T, H]
        cos, sin = self.rope.lookup(meta.token_positions, self.dtype)
        for layer, k_cache, v_cache in zip(self.layers, kv.k, kv.v, strict=True):
            h = layer(h, cos, sin, k_cache, v_cache, meta)
        if logits_indices is not None:
            h = h[logits_indices]  # [N, H]
        h = F.rms_norm(h, (self.cfg.hidden_size,), self.norm, self.cfg.rms_norm_eps)
        return linear(h, self.lm_head).float()  # [N, V]
