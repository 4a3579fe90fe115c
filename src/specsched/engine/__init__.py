"""specsched.engine: a small Llama-family inference engine in plain PyTorch (CPU and CUDA).

    from specsched.engine import LLM, SamplingParams
    llm = LLM("smollm2-135m", max_num_seqs=4)
    out = llm.generate(["What is 2+2?"], SamplingParams(max_tokens=32), use_chat_template=True)

Layers: `model.LlamaModel` (one ragged batched forward), `attention.ragged_attention` (pure
function of `AttentionMetadata`), `kv_cache.KVCache` (slots x max_model_len),
`scheduler.Scheduler` (continuous batching, chunked prefill, prefix-cache admission),
`engine.LLMEngine` (step = schedule -> run -> postprocess), `llm.LLM` (user API).
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

__all__ = [
    "DEFAULT_MODEL",
    "LLM",
    "AttentionMetadata",
    "EngineConfig",
    "KVCache",
    "LLMEngine",
    "LlamaModel",
    "ModelConfig",
    "Output",
    "RequestStats",
    "RopeScaling",
    "SamplingParams",
    "build_metadata",
    "load_model",
    "ragged_attention",
]
