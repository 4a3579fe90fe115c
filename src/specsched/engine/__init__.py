"""specsched.engine: a small Llama-family inference engine in plain PyTorch (CPU and CUDA).

    from specsched.engine import LLM, SamplingParams
    llm = LLM("smollm2-135m", max_num_seqs=4)
    out = llm.generate(["What is 2+2?"], SamplingParams(max_tokens=32), use_chat_template=True)

Rooms: `config` (EngineConfig, ModelConfig: torch-free), `sched/` (requests, continuous batching,
prefix cache), `layers/` (the model, ragged attention, KV cache), `loading/` (GGUF / HF dirs,
tokenizer), `sampling/` (SamplingParams: torch-free; the sampling rule), `spec/`
(SpeculativeConfig: torch-free; the speculator asking `specsched.policy` for K, drafters,
verification), `engine` (LLMEngine.step), `recorder` + `stats` (step statistics), `driver`
(stepwise runs for profiling and benchmarks), `llm` (the user API).

Importing this package does not import torch: the names below load on first access (PEP 562),
so the torch-free configs (`SpeculativeConfig`, `EngineConfig`, `SamplingParams`) stay light.

    spec = SpeculativeConfig(drafter=DrafterKind.STREAMING, policy=PolicyConfig.constant(3))
    llm = LLM("smollm2-135m", speculative=spec)
    outs = llm.generate(prompts, SamplingParams(max_tokens=64))
    llm.last_run_stats.to_dict()   # steps, K histogram, acceptance per position / ctx bucket
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specsched.engine.config import EngineConfig, ModelConfig, RopeScaling
    from specsched.engine.engine import LLMEngine
    from specsched.engine.layers.attention import AttentionMetadata, build_metadata
    from specsched.engine.layers.kv_cache import KVCache
    from specsched.engine.layers.model import LlamaModel
    from specsched.engine.llm import LLM
    from specsched.engine.loading.registry import DEFAULT_MODEL, load_model
    from specsched.engine.sampling.params import SamplingParams
    from specsched.engine.sched.sequence import FinishReason, Output, RequestStats
    from specsched.engine.spec.config import DrafterKind, SpeculativeConfig
    from specsched.engine.stats import RunStats, SpecCounters

# name -> module that defines it (loaded on first access)
_EXPORTS: dict[str, str] = {
    "DEFAULT_MODEL": "loading.registry",
    "LLM": "llm",
    "AttentionMetadata": "layers.attention",
    "DrafterKind": "spec.config",
    "EngineConfig": "config",
    "FinishReason": "sched.sequence",
    "KVCache": "layers.kv_cache",
    "LLMEngine": "engine",
    "LlamaModel": "layers.model",
    "ModelConfig": "config",
    "Output": "sched.sequence",
    "RequestStats": "sched.sequence",
    "RopeScaling": "config",
    "RunStats": "stats",
    "SamplingParams": "sampling.params",
    "SpecCounters": "stats",
    "SpeculativeConfig": "spec.config",
    "build_metadata": "layers.attention",
    "load_model": "loading.registry",
}

__all__ = [
    "DEFAULT_MODEL",
    "LLM",
    "AttentionMetadata",
    "DrafterKind",
    "EngineConfig",
    "FinishReason",
    "KVCache",
    "LLMEngine",
    "LlamaModel",
    "ModelConfig",
    "Output",
    "RequestStats",
    "RopeScaling",
    "RunStats",
    "SamplingParams",
    "SpecCounters",
    "SpeculativeConfig",
    "build_metadata",
    "load_model",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
