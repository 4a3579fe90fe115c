"""Llama-family decoder (SmolLM2, Llama 2/3.x, Qwen2) over a ragged batch of new tokens.

Weights arrive in Hugging Face naming (`model.layers.0.self_attn.q_proj.weight`, ...) and are
fused at load time: q/k/v into one `qkv` matrix, gate/up into one `gate_up` matrix, so a layer is
four matmuls. Each matmul is a `specsched.engine.layers.linear.Linear`: on CPU fp32 oneDNN's linear
with the weight prepacked once into oneDNN's blocked layout (see that module for measurements).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from specsched.engine.config import ModelConfig
from specsched.engine.layers import int8_layer
from specsched.engine.layers.attention import AttentionMetadata, ragged_attention, write_kv
from specsched.engine.layers.compiled import CompiledStep, compile_step
from specsched.engine.layers.int8_linear import Int8Linear
from specsched.engine.layers.kv_cache import KVCache
from specsched.engine.layers.linear import (
    Linear,
    make_linear,
    onednn_fp32,
    onednn_linear,
)
from specsched.engine.layers.rope import RotaryTable, apply_rotary

MatMul = Linear | Int8Linear  # a layer's weight: prepacked fp32/bf16, or int8 rows (drafts)


def linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """`x @ w.T + b` for 2-D x and a plain weight, via oneDNN on CPU fp32, else F.linear."""
    if onednn_fp32(w) and x.dtype == torch.float32:
        return onednn_linear(x, w, b)
    return F.linear(x, w, b)


class DecoderLayer(nn.Module):
    def __init__(
        self,
        cfg: ModelConfig,
        qkv: MatMul,  # [Q+2K, H] (+ bias [Q+2K])
        o: MatMul,  # [H, Q]
        gate_up: MatMul,  # [2I, H]
        down: MatMul,  # [H, I]
        input_norm: torch.Tensor,  # [H]
        post_norm: torch.Tensor,  # [H]
    ) -> None:
        super().__init__()
        self.cfg = cfg
        self.qkv, self.o, self.gate_up, self.down = qkv, o, gate_up, down
        self.input_norm = input_norm
        self.post_norm = post_norm
        self.scale = cfg.head_dim**-0.5
        # int8 weights (a draft's copy): few-row batches run as two native calls + attention
        self.native_int8 = int8_layer.fusable(self)

    @classmethod
    def from_weights(
        cls,
        cfg: ModelConfig,
        weights: dict[str, torch.Tensor],
        prefix: str,
        keep_plain: bool = False,  # also keep row-major weights (the compiled one-token path)
        weight_dtype: torch.dtype | None = None,  # matmul weights in this dtype (None: as given)
    ) -> DecoderLayer:
        """q/k/v fused into one matmul and gate/up into another, from Hugging Face names."""
        att, mlp = f"{prefix}.self_attn", f"{prefix}.mlp"

        def lin(w: torch.Tensor, b: torch.Tensor | None = None) -> MatMul:
            return make_linear(w, b, keep_plain, weight_dtype)

        qkv_b: torch.Tensor | None = None
        if cfg.attention_bias:
            qkv_b = torch.cat([weights[f"{att}.{n}_proj.bias"] for n in "qkv"])  # [Q+2K]
        return cls(
            cfg,
            lin(torch.cat([weights[f"{att}.{n}_proj.weight"] for n in "qkv"]), qkv_b),
            lin(weights[f"{att}.o_proj.weight"]),
            lin(torch.cat([weights[f"{mlp}.gate_proj.weight"], weights[f"{mlp}.up_proj.weight"]])),
            lin(weights[f"{mlp}.down_proj.weight"]),
            weights[f"{prefix}.input_layernorm.weight"],
            weights[f"{prefix}.post_attention_layernorm.weight"],
        )

    def with_weight_dtype(self, dtype: torch.dtype) -> DecoderLayer:
        """This layer with copies of its matmul weights in `dtype` (norms shared)."""
        return DecoderLayer(self.cfg, self.qkv.to(dtype), self.o.to(dtype),
                            self.gate_up.to(dtype), self.down.to(dtype), self.input_norm,
                            self.post_norm)

    def weight_nbytes(self) -> int:
        return sum(lin.nbytes() for lin in (self.qkv, self.o, self.gate_up, self.down))

    @property
    def qkv_w(self) -> torch.Tensor:  # [Q+2K, H]
        return self.qkv.weight

    @property
    def qkv_b(self) -> torch.Tensor | None:  # [Q+2K]
        return self.qkv.bias

    @property
    def o_w(self) -> torch.Tensor:  # [H, Q]
        return self.o.weight

    @property
    def gate_up_w(self) -> torch.Tensor:  # [2I, H]
        return self.gate_up.weight

    @property
    def down_w(self) -> torch.Tensor:  # [H, I]
        return self.down.weight

    def forward(
        self,
        h: torch.Tensor,  # [T, H]
        cos: torch.Tensor,  # [T, 1, D/2]
        sin: torch.Tensor,  # [T, 1, D/2]
        k_cache: torch.Tensor,  # [S, Hkv, L, D]
        v_cache: torch.Tensor,  # [S, Hkv, L, D]
        meta: AttentionMetadata,
    ) -> torch.Tensor:  # [T, H]
        if self.native_int8 and int8_layer.runs(h, k_cache):
            q = int8_layer.pre(self, h, cos, sin, k_cache, v_cache, meta)  # [T, Hq, D]
            return int8_layer.post(self, h, ragged_attention(q, k_cache, v_cache, meta,
                                                             self.scale))
        cfg = self.cfg
        t = h.shape[0]
        hq, hkv, d = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        x = F.rms_norm(h, (cfg.hidden_size,), self.input_norm, cfg.rms_norm_eps)
        qkv = self.qkv(x)  # [T, Q+2K]
        # q and k are adjacent columns: one rotation for both (elementwise, same values)
        qk = apply_rotary(qkv[:, : cfg.q_size + cfg.kv_size].view(t, hq + hkv, d), cos, sin)
        q, k = qk[:, :hq], qk[:, hq:]  # [T, Hq, D], [T, Hkv, D] views
        v = qkv[:, cfg.q_size + cfg.kv_size :].view(t, hkv, d)  # [T, Hkv, D]
        write_kv(k_cache, v_cache, k, v, meta)
        o = ragged_attention(q, k_cache, v_cache, meta, self.scale)  # [T, Hq, D]
        h = self.o(o.view(t, cfg.q_size)).add_(h)  # residual
        x = F.rms_norm(h, (cfg.hidden_size,), self.post_norm, cfg.rms_norm_eps)
        gate, up = self.gate_up(x).chunk(2, dim=-1)  # 2 x [T, I]
        return self.down(F.silu(gate).mul_(up)).add_(h)  # residual

    def forward_one(
        self,
        h: torch.Tensor,  # [H], the batch's only token
        cos: torch.Tensor,  # [D/2]
        sin: torch.Tensor,  # [D/2]
        k_cache: torch.Tensor,  # [S, Hkv, L, D]
        v_cache: torch.Tensor,  # [S, Hkv, L, D]
        meta: AttentionMetadata,
        step: CompiledStep,
    ) -> torch.Tensor:  # [H]
        """`forward` for T = 1 through the compiled graphs (`specsched.engine.layers.compiled`)."""
        cfg = self.cfg
        eps = cfg.rms_norm_eps
        q, k, v = step.pre(
            h, self.input_norm, self.qkv.weight, self.qkv.bias, cos, sin, eps,
            cfg.num_heads, cfg.num_kv_heads,
        )  # [Hq, D], [Hkv, D], [Hkv, D]
        write_kv(k_cache, v_cache, k[None], v[None], meta)
        o = ragged_attention(q[None], k_cache, v_cache, meta, self.scale)  # [1, Hq, D]
        return step.post(
            h, o.view(cfg.q_size), self.o.weight, self.post_norm, self.gate_up.weight,
            self.down.weight, eps,
        )


class LlamaModel(nn.Module):
    """The decoder; `forward` runs one ragged batch and returns logits for the chosen tokens."""

    def __init__(
        self,
        cfg: ModelConfig,
        weights: dict[str, torch.Tensor],
        max_model_len: int,
        dtype: torch.dtype,
        device: torch.device | str,
        compile: bool = False,
        weight_dtype: torch.dtype | None = None,
    ) -> None:
        """`compile`: run one-token batches through `specsched.engine.layers.compiled` (keeps a
        row-major copy of every weight besides oneDNN's packed one on CPU). `weight_dtype`:
        matmul weights in another dtype than the activations (`dtype`), e.g. a bf16 draft with
        an fp32 residual stream and KV cache (see `with_weight_dtype`)."""
        super().__init__()
        self.cfg = cfg
        w = {name: t.to(device=device, dtype=dtype).contiguous() for name, t in weights.items()}
        self.embed = w["model.embed_tokens.weight"]  # [V, H]
        self.layers = nn.ModuleList(
            DecoderLayer.from_weights(cfg, w, f"model.layers.{i}", compile, weight_dtype)
            for i in range(cfg.num_layers)
        )
        self.norm = w["model.norm.weight"]  # [H]
        # tied: the plain table exists anyway (embedding), so 1-row batches may use it
        tied = cfg.tie_word_embeddings
        head = self.embed if tied else w["lm_head.weight"]  # [V, H]
        self.lm_head: MatMul
        if weight_dtype is not None and weight_dtype != dtype:
            self.lm_head = make_linear(head, keep_plain=compile, dtype=weight_dtype)
        else:
            self.lm_head = Linear(head, keep_plain=tied or compile)
        self.rope = RotaryTable(cfg, max_model_len, device)
        self.dtype = dtype
        self.step: CompiledStep | None = compile_step() if compile else None
        self._weight_copies: dict[torch.dtype, LlamaModel] = {}  # see with_weight_dtype

    def with_weight_dtype(self, dtype: torch.dtype) -> LlamaModel:
        """A model that shares this one's embedding table, norms, rotary table and activation
        dtype but reads copies of its matmul weights (and output layer) in `dtype`: a draft that
        streams half the bytes of an fp32 target (bf16) or a quarter (int8, `Int8Linear`).
        Eager (no compiled graphs): oneDNN's packed bf16 kernel beat the compiled one-row
        reductions in bf16 (notes/engine.md). Built once
        per dtype and kept (memory: `weight_nbytes()` of the copy)."""
        if dtype == self.lm_head.dtype:
            return self
        if dtype in self._weight_copies:  # built once (set_speculative rebuilds drafters)
            return self._weight_copies[dtype]
        draft = LlamaModel.__new__(LlamaModel)
        nn.Module.__init__(draft)
        draft.cfg, draft.embed, draft.norm = self.cfg, self.embed, self.norm
        draft.rope, draft.dtype = self.rope, self.dtype
        draft.layers = nn.ModuleList(
            layer.with_weight_dtype(dtype) for layer in self.layers
            if isinstance(layer, DecoderLayer)
        )
        draft.lm_head = self.lm_head.to(dtype)
        draft.step = None
        draft._weight_copies = {}
        self._weight_copies[dtype] = draft
        return draft

    @property
    def weight_dtype(self) -> torch.dtype:
        """The dtype of the matmul weights (the activations' `dtype` unless a draft copy)."""
        return self.lm_head.dtype

    def weight_nbytes(self) -> int:
        """Bytes of every matmul weight incl. the output layer (embedding and norms excluded)."""
        layers = sum(layer.weight_nbytes() for layer in self.layers
                     if isinstance(layer, DecoderLayer))
        return layers + self.lm_head.nbytes()

    @torch.inference_mode()
    def forward(
        self,
        input_ids: torch.Tensor,  # [T] int64, new tokens of all sequences, sequence-major
        meta: AttentionMetadata,
        kv: KVCache,
        logits_indices: torch.Tensor | None = None,  # [N] rows of T to return; None = all
    ) -> torch.Tensor:  # [N, V] float32
        if self.step is not None and input_ids.shape[0] == 1:
            return self._forward_one(input_ids, meta, kv, logits_indices, self.step)
        h = F.embedding(input_ids, self.embed)  # [T, H]
        cos, sin = self.rope.lookup(meta.token_positions, self.dtype)
        for layer, k_cache, v_cache in zip(self.layers, kv.k, kv.v, strict=True):
            h = layer(h, cos, sin, k_cache, v_cache, meta)
        if logits_indices is not None:
            h = h[logits_indices]  # [N, H]
        if int8_layer.head_runs(h, self.lm_head):
            assert isinstance(self.lm_head, Int8Linear)
            return int8_layer.norm_head(h, self.norm, self.cfg.rms_norm_eps, self.lm_head)
        h = F.rms_norm(h, (self.cfg.hidden_size,), self.norm, self.cfg.rms_norm_eps)
        return self.lm_head(h).float()  # [N, V]

    def _forward_one(
        self,
        input_ids: torch.Tensor,  # [1]
        meta: AttentionMetadata,
        kv: KVCache,
        logits_indices: torch.Tensor | None,  # None, [0] or empty
        step: CompiledStep,
    ) -> torch.Tensor:  # [N, V] float32, N in {0, 1}
        h = self.embed[input_ids[0]]  # [H]
        cos, sin = self.rope.lookup(meta.token_positions, self.dtype)  # 2 x [1, 1, D/2]
        for layer, k_cache, v_cache in zip(self.layers, kv.k, kv.v, strict=True):
            assert isinstance(layer, DecoderLayer)
            h = layer.forward_one(h, cos[0, 0], sin[0, 0], k_cache, v_cache, meta, step)
        if logits_indices is not None and logits_indices.numel() == 0:
            return torch.empty(0, self.cfg.vocab_size, device=h.device)
        logits = step.head(h, self.norm, self.lm_head.weight, self.cfg.rms_norm_eps)  # [V]
        return logits[None]
