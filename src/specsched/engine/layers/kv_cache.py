"""Preallocated per-layer KV cache: num_slots x max_model_len positions per layer."""

from __future__ import annotations

import torch

from specsched.engine.config import ModelConfig


class KVCache:
    """`k[layer], v[layer]: [num_slots, Hkv, max_model_len, D]`; a slot holds one sequence.

    The cache does not track lengths: the caller owns each slot's num_computed_tokens, so
    rolling back rejected speculative tokens is just lowering that number.
    """

    def __init__(
        self,
        cfg: ModelConfig,
        num_slots: int,
        max_model_len: int,
        dtype: torch.dtype,
        device: torch.device | str,
    ) -> None:
        shape = (num_slots, cfg.num_kv_heads, max_model_len, cfg.head_dim)
        self.k: list[torch.Tensor] = [
            torch.zeros(shape, dtype=dtype, device=device) for _ in range(cfg.num_layers)
        ]
        self.v: list[torch.Tensor] = [
            torch.zeros(shape, dtype=dtype, device=device) for _ in range(cfg.num_layers)
        ]
        self.num_slots = num_slots
        self.max_model_len = max_model_len

    def copy_prefix(self, src_slot: int, dst_slot: int, num_tokens: int) -> None:
        """Copy positions [0, num_tokens) of every layer from one slot to another."""
        for k, v in zip(self.k, self.v, strict=True):
            k[dst_slot, :, :num_tokens] = k[src_slot, :, :num_tokens]
            v[dst_slot, :, :num_tokens] = v[src_slot, :, :num_tokens]

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (*self.k, *self.v))
