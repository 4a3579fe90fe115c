"""Build a real vLLM scheduler on CPU and drive it with fake model outputs (no model, no GPU).

Follows vLLM's own CPU scheduler tests: a local `config.json` as the model,
`skip_tokenizer_init=True`, `DeviceConfig(device="cpu")`, a `KVCacheConfig` with one
`FullAttentionSpec` group. The fake runner accepts every draft (so each decode step adds 1 + K
tokens; `accept` sets another rule) and drafts exactly the K the scheduler asked for, as vLLM's
model runner does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from vllm.config import (
    CacheConfig,
    DeviceConfig,
    ModelConfig,
    SchedulerConfig,
    SpeculativeConfig,
    VllmConfig,
)
from vllm.sampling_params import SamplingParams
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.kv_cache_interface import (
    FullAttentionSpec,
    KVCacheConfig,
    KVCacheGroupSpec,
)
from vllm.v1.outputs import DraftTokenIds, ModelRunnerOutput
from vllm.v1.request import Request
from vllm.v1.structured_output import StructuredOutputManager

BLOCK_SIZE = 16
NUM_BLOCKS = 2000
MAX_MODEL_LEN = 4096
PROMPT_TOKEN = 5
SAMPLED_TOKEN = 7
TINY_LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "num_hidden_layers": 1,
    "vocab_size": 512,
    "max_position_embeddings": MAX_MODEL_LEN,
    "rms_norm_eps": 1e-5,
    "torch_dtype": "float32",
    "bos_token_id": 1,
    "eos_token_id": 2,
}


def write_tiny_model(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(TINY_LLAMA), encoding="utf-8")
    return path


def make_scheduler(
    model_dir: Path,
    scheduler_cls: type[Any] = Scheduler,
    table: list[list[int]] | None = None,
    num_spec_tokens: int = 4,
    additional_config: dict[str, Any] | None = None,
    max_num_seqs: int = 16,
    async_scheduling: bool = False,
    speculative: dict[str, Any] | None = None,
) -> Any:
    """A vLLM scheduler of `scheduler_cls` with an ngram speculative config on CPU (or the
    whole `speculative` config given)."""
    spec_kwargs: dict[str, Any] = {
        "method": "ngram",
        "num_speculative_tokens": num_spec_tokens,
        "prompt_lookup_max": 3,
        "prompt_lookup_min": 1,
    }
    if table is not None:
        spec_kwargs["num_speculative_tokens_per_batch_size"] = table
    if speculative is not None:
        spec_kwargs = speculative
    cache_config = CacheConfig(block_size=BLOCK_SIZE, enable_prefix_caching=False)
    vllm_config = VllmConfig(
        model_config=ModelConfig(
            model=str(model_dir),
            skip_tokenizer_init=True,
            dtype="float32",
            max_model_len=MAX_MODEL_LEN,
        ),
        scheduler_config=SchedulerConfig(
            max_num_seqs=max_num_seqs,
            max_num_batched_tokens=8192,
            max_model_len=MAX_MODEL_LEN,
            is_encoder_decoder=False,
            async_scheduling=False,
        ),
        cache_config=cache_config,
        speculative_config=SpeculativeConfig(**spec_kwargs),
        device_config=DeviceConfig(device="cpu"),
        additional_config=additional_config or {},
    )
    # vLLM validates async scheduling only with GPU-side drafters (EAGLE, draft model,
    # ngram_gpu); the scheduler's logic does not depend on the drafter, so switch it on after
    # validation, as vLLM's own config resolution would.
    vllm_config.scheduler_config.async_scheduling = async_scheduling
    cache_config.num_gpu_blocks = NUM_BLOCKS
    kv_cache_config = KVCacheConfig(
        num_blocks=NUM_BLOCKS,
        kv_cache_tensors=[],
        kv_cache_groups=[
            KVCacheGroupSpec(
                ["layer"],
                FullAttentionSpec(
                    block_size=BLOCK_SIZE, num_kv_heads=1, head_size=16, dtype=torch.float32
                ),
            )
        ],
    )
    return scheduler_cls(
        vllm_config=vllm_config,
        kv_cache_config=kv_cache_config,
        structured_output_manager=StructuredOutputManager(vllm_config),
        log_stats=False,
        block_size=BLOCK_SIZE,
    )


@dataclass(frozen=True, slots=True)
class Step:
    """One scheduled step as the scheduler class saw it (contexts before the advance)."""

    k: int  # SchedulerOutput.num_spec_tokens_to_schedule
    computed: dict[str, int]  # req_id -> num_computed_tokens before this step
    prompt: dict[str, int]  # req_id -> num_prompt_tokens
    num_drafts: dict[str, int]  # req_id -> draft tokens verified in this step

    @property
    def batch_size(self) -> int:
        return len(self.computed)


def add_request(sched: Any, req_id: str, prompt_len: int, max_tokens: int = 400) -> None:
    params = SamplingParams(max_tokens=max_tokens, ignore_eos=True, temperature=0.0)
    sched.add_request(Request(req_id, [PROMPT_TOKEN] * prompt_len, params, None))


def step(
    sched: Any,
    accept: Callable[[str, int], int] | None = None,
    before_update: Callable[[dict[str, int]], None] | None = None,
) -> Step:
    """schedule() -> fake runner output -> K drafts per decode request. `accept(req_id, drafts)`:
    how many of a request's verified drafts are accepted (default: all). `before_update(drafts)`
    runs before `update_from_output` with each request's verified drafts (to advance a clock)."""
    out = sched.schedule()
    ids = list(out.num_scheduled_tokens)
    computed = {r: sched.requests[r].num_computed_tokens - out.num_scheduled_tokens[r] for r in ids}
    prompt = {r: sched.requests[r].num_prompt_tokens for r in ids}
    drafts = {r: len(out.scheduled_spec_decode_tokens.get(r, ())) for r in ids}
    decoding = [r for r in ids if not sched.requests[r].is_prefill_chunk]
    rule = accept or (lambda _, d: d)
    sampled = [[SAMPLED_TOKEN] * (1 + rule(r, drafts[r])) if r in decoding else [] for r in ids]
    runner_output = ModelRunnerOutput(
        req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)}, sampled_token_ids=sampled
    )
    if before_update is not None:
        before_update(drafts)
    sched.update_from_output(out, runner_output)
    k = out.num_spec_tokens_to_schedule
    live = [r for r in decoding if r in sched.requests and not sched.requests[r].is_finished()]
    sched.update_draft_token_ids(DraftTokenIds(live, [[SAMPLED_TOKEN] * k for _ in live]))
    return Step(k=k, computed=computed, prompt=prompt, num_drafts=drafts)
