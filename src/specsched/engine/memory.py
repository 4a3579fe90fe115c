"""Refuse an engine that cannot run before anything is allocated: a context beyond the model's,
or a KV cache larger than the memory this process can get.

The KV cache is preallocated (`layers.kv_cache.KVCache`): K and V per layer for every slot and
position, `2 x layers x max_num_seqs x max_model_len x kv_heads x head_dim x dtype bytes`. The
memory it may take (`available_memory`) is the least of, where known: on CPU the kernel's
MemAvailable (else free physical pages), the cgroup's memory.max minus memory.current, and the
address-space limit (RLIMIT_AS) minus this process's current size; on CUDA the device's free
memory. The target's weights are already loaded when this runs; a draft model's cache is not
counted.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path
from typing import NamedTuple

from specsched.engine.config import DTYPE_BYTES, EngineConfig, ModelConfig
from specsched.errors import UserError

GiB = float(1 << 30)


class Available(NamedTuple):
    bytes: int
    source: str  # where the number comes from, for the error message


def kv_cache_bytes(model: ModelConfig, max_num_seqs: int, max_model_len: int, dtype: str) -> int:
    """Bytes of the preallocated KV cache: K and V, every layer, slot and position."""
    return (2 * model.num_layers * max_num_seqs * max_model_len * model.num_kv_heads
            * model.head_dim * DTYPE_BYTES[dtype])


def check_engine_fits(model: ModelConfig, cfg: EngineConfig, available: Available | None) -> None:
    """UserError when max_model_len is beyond the model's context or the KV cache does not fit
    in `available` (None: unknown, not checked)."""
    limit = model.max_context
    if cfg.max_model_len > limit:
        scaled = "" if model.rope_scaling is None else f", with {model.rope_scaling.rope_type} " \
            f"RoPE scaling x{model.rope_scaling.factor:g}"
        raise UserError(
            f"max_model_len {cfg.max_model_len} is beyond the model's context of {limit} tokens "
            f"(max_position_embeddings {model.max_position_embeddings}{scaled}); lower "
            f"--max-model-len to at most {limit}"
        )
    need = kv_cache_bytes(model, cfg.max_num_seqs, cfg.max_model_len, cfg.dtype)
    if available is not None and need > available.bytes:
        raise UserError(
            f"the KV cache needs {need / GiB:.2f} GiB (2 x {model.num_layers} layers x "
            f"{cfg.max_num_seqs} seqs x {cfg.max_model_len} tokens x {model.num_kv_heads} KV heads "
            f"x {model.head_dim} x {DTYPE_BYTES[cfg.dtype]} bytes) but {available.bytes / GiB:.2f} "
            f"GiB is available ({available.source}); lower --max-num-seqs or --max-model-len"
        )


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None


def _cgroup_headroom() -> int | None:
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = Path("/sys/fs/cgroup/memory.current").read_text().strip()
        return None if limit == "max" else max(int(limit) - int(used), 0)
    except (OSError, ValueError):
        return None


def _address_space_headroom() -> int | None:
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return max(soft - int(line.split()[1]) * 1024, 0)
    except (OSError, ValueError, IndexError):
        pass
    return soft


def available_memory(device: str) -> Available | None:
    """Memory a new allocation on `device` may take (see the module doc); None if unknown."""
    if device.startswith("cuda"):
        import torch

        free, _total = torch.cuda.mem_get_info(torch.device(device))
        return Available(int(free), f"free memory on {device}")
    found = [(n, src) for n, src in ((_meminfo_available(), "MemAvailable"),
                                     (_cgroup_headroom(), "cgroup memory.max"),
                                     (_address_space_headroom(), "RLIMIT_AS headroom"))
             if n is not None]
    if not found:
        return None
    n, src = min(found)
    return Available(n, src)
