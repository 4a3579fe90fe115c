"""Optional `torch.compile`d single-token step (`EngineConfig.compile`): the B=1 decode path.

When a step feeds exactly one token (batch 1 decode, or a batch-1 drafting step), everything of a
decoder layer except attention runs as two compiled graphs:

- `pre`:  RMSNorm -> qkv matmul (+ bias) -> RoPE on q and k        (before the KV write)
- `post`: o matmul + residual -> RMSNorm -> gate/up matmul -> SiLU * up -> down matmul + residual

plus one `head` graph (final RMSNorm -> output layer). Each one-row matmul is written as a
row-wise dot product `(W * x).sum(-1)`, which inductor emits as a vectorized, threaded reduction
that streams W once; on this project's 2-core CPU that reads the weights at ~20-28 GB/s
against 13-25 GB/s for oneDNN's one-row GEMV (`benchmarks/cpu_probe.py gemv`), and fusing the
norms, RoPE and SwiGLU removes ~20 eager dispatches per layer. Attention stays eager
(`ragged_attention`).

Why only one token: for T > 1 rows the same formulation would re-read W per row; oneDNN's packed
GEMM is the right kernel there (`specsched.engine.layers.linear`). Results are equal to the eager
path up to float summation order (tested with a tolerance), as between oneDNN's row-count kernels.

The first call compiles (~14 s cold on 2 cores, ~4 s with a warm inductor cache; inductor needs
a C++ compiler, gcc here, checked up front by `check_compile_support`);
every layer reuses the same graphs (same shapes), so the cost is paid once per model shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from specsched.errors import UserError


def _pre(
    h: torch.Tensor,  # [H]
    norm_w: torch.Tensor,  # [H]
    qkv_w: torch.Tensor,  # [Q+2K, H]
    qkv_b: torch.Tensor | None,  # [Q+2K]
    cos: torch.Tensor,  # [D/2]
    sin: torch.Tensor,  # [D/2]
    eps: float,
    num_heads: int,
    num_kv_heads: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:  # q [Hq, D], k [Hkv, D], v [Hkv, D]
    x = F.rms_norm(h, (h.shape[0],), norm_w, eps)
    qkv = (qkv_w * x).sum(-1)  # [Q+2K]
    if qkv_b is not None:
        qkv = qkv + qkv_b
    heads = num_heads + 2 * num_kv_heads
    qkv = qkv.view(heads, -1)  # [Hq+2Hkv, D]
    qk = qkv[: num_heads + num_kv_heads]
    x1, x2 = qk.chunk(2, dim=-1)
    qk = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
    return qk[:num_heads], qk[num_heads:], qkv[num_heads + num_kv_heads :]


def _post(
    h: torch.Tensor,  # [H] residual stream before attention
    attn: torch.Tensor,  # [Q] attention output
    o_w: torch.Tensor,  # [H, Q]
    norm_w: torch.Tensor,  # [H]
    gate_up_w: torch.Tensor,  # [2I, H]
    down_w: torch.Tensor,  # [H, I]
    eps: float,
) -> torch.Tensor:  # [H]
    h = (o_w * attn).sum(-1) + h
    x = F.rms_norm(h, (h.shape[0],), norm_w, eps)
    gate, up = (gate_up_w * x).sum(-1).chunk(2)  # 2 x [I]
    return (down_w * (F.silu(gate) * up)).sum(-1) + h


def _head(
    h: torch.Tensor,  # [H]
    norm_w: torch.Tensor,  # [H]
    w: torch.Tensor,  # [V, H]
    eps: float,
) -> torch.Tensor:  # [V] float32
    return (w * F.rms_norm(h, (h.shape[0],), norm_w, eps)).sum(-1).float()


@dataclass(frozen=True, slots=True)
class CompiledStep:
    """The compiled graphs of one model; build with `compile_step`."""

    pre: Callable[..., Any]
    post: Callable[..., Any]
    head: Callable[..., Any]


def _has_cpp_compiler() -> bool:
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        get_cpp_compiler()
    except Exception:  # any failure means inductor cannot build CPU kernels here
        return False
    return True


def _has_triton() -> bool:
    from torch.utils._triton import has_triton

    return bool(has_triton())


def check_compile_support(device: str) -> None:
    """UserError now, rather than a compiler traceback at the first step, when torch.compile
    cannot build kernels for `device` here (CPU: a C++ compiler; CUDA: triton)."""
    if device.startswith("cuda"):
        if not _has_triton():
            raise UserError("compile=True on CUDA needs triton (pip install triton); "
                            "or run without --compile")
    elif not _has_cpp_compiler():
        raise UserError("compile=True on CPU needs a C++ compiler for torch.compile (g++ or "
                        "clang++ on PATH, e.g. apt-get install g++); or run without --compile")


def compile_step() -> CompiledStep:
    """Wrap the three graphs with `torch.compile` (compilation happens on first call)."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        return torch.compile(fn, dynamic=False, fullgraph=True)

    return CompiledStep(pre=wrap(_pre), post=wrap(_post), head=wrap(_head))
