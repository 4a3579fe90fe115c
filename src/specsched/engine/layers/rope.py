"""Rotary position embeddings (HF "rotate_half" convention) with llama3 / linear scaling."""

from __future__ import annotations

import math

import torch

from specsched.engine.config import ModelConfig


def inv_frequencies(cfg: ModelConfig) -> torch.Tensor:  # [D/2] float32
    """Per-pair inverse frequencies, scaled exactly as transformers does."""
    d = cfg.head_dim
    inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    sc = cfg.rope_scaling
    if sc is None:
        return inv_freq
    if sc.rope_type == "linear":
        return inv_freq / sc.factor
    # llama3: keep high frequencies, divide low ones by factor, interpolate in between.
    old_len = sc.original_max_position_embeddings
    low_wavelen = old_len / sc.low_freq_factor
    high_wavelen = old_len / sc.high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_wavelen, inv_freq / sc.factor, inv_freq)
    smooth = (old_len / wavelen - sc.low_freq_factor) / (sc.high_freq_factor - sc.low_freq_factor)
    smoothed = (1 - smooth) * scaled / sc.factor + smooth * scaled
    is_medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(is_medium, smoothed, scaled)


class RotaryTable:
    """Precomputed cos/sin for positions [0, max_len); `apply` rotates q or k in place of HF's."""

    def __init__(self, cfg: ModelConfig, max_len: int, device: torch.device | str) -> None:
        inv_freq = inv_frequencies(cfg)  # [D/2]
        t = torch.arange(max_len, dtype=torch.float32)
        freqs = torch.outer(t, inv_freq)  # [L, D/2]
        self.cos = freqs.cos().to(device)  # [L, D/2] float32
        self.sin = freqs.sin().to(device)
        self.max_len = max_len

    def lookup(
        self, positions: torch.Tensor, dtype: torch.dtype
    ) -> tuple[torch.Tensor, torch.Tensor]:  # 2 x [T, 1, D/2]
        cos = self.cos[positions].to(dtype).unsqueeze(1)
        sin = self.sin[positions].to(dtype).unsqueeze(1)
        return cos, sin


def apply_rotary(
    x: torch.Tensor,  # [T, H, D]
    cos: torch.Tensor,  # [T, 1, D/2]
    sin: torch.Tensor,  # [T, 1, D/2]
) -> torch.Tensor:  # [T, H, D]
    x1, x2 = x.chunk(2, dim=-1)  # 2 x [T, H, D/2]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
