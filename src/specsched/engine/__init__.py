"""specsched.engine: a small Llama-family inference engine in plain PyTorch (CPU and CUDA).

    from specsched.engine import LLM, SamplingParams
    llm = LLM("smollm2-135m", max_num_seqs=4)
    out = llm.generate(["What is 2+2?"], SamplingParams(max_tokens=32), use_chat_template=True)

Layers: `model.LlamaModel` (one ragged batched forward), `attention.ragged_attention` (pure
function of `AttentionMetadata`), `kv_cache.KVCache` (slots x max_model_len),
`scheduler.Scheduler` (continuous batching, chunked prefill, prefix-cache admission),
`engine.LLMEngine` (step = schedule -> route K + propose -> run -> verify -> postprocess),
`llm.LLM` (user API). Speculative decoding: `spec_config.SpeculativeConfig` (drafter
streaming | ngram | model:PATH | none, KV window, K schedule, ctx_agg, per-request K),
`speculator` (per-step K from `specsched.router`), `drafters/`, `verify`, `spec_stats`.

    spec = SpeculativeConfig(drafter="streaming", window=256, schedule=static_schedule(3))
    llm = LLM("smollm2-135m", speculative=spec)
    outs = llm.generate(prompts, SamplingParams(max_tokens=64))
    llm.last_run_stats.to_dict()   # steps, K histogram, acceptance per position / ctx bucket
"""

from __future__ import annotations

from specsched.engine.attention import AttentionMetadata, build_metadata, ragged_attention
from specsched.engine.config import EngineConfig, ModelConfig, RopeScaling
from specsched.engine.engine import LLMEngine
from specsched.engine.kv_cache import KVCache
from specsched.engine.llm import LLM
from specsched.engine.model import LlamaModel
from specsched.engine.models import DEFAULT_MODEL, load_model
from specsched.engine.sampling import SamplingParams
from specsched.engine.sequence import Output, RequestStats
from specsched.engine.spec_config import DrafterKind, SpeculativeConfig, static_schedule
from specsched.engine.spec_stats import RunStats, SpecCounters

__all__ = [
    "DEFAULT_MODEL",
    "LLM",
    "AttentionMetadata",
    "DrafterKind",
    "EngineConfig",
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
    "ragged_attention",
    "static_schedule",
]
