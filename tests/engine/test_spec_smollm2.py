"""Greedy losslessness on the real default model (SmolLM2-135M) with the streaming drafter."""

from __future__ import annotations

from typing import Any

import pytest

from specsched.engine import LLM, SamplingParams
from specsched.engine.spec.config import SpeculativeConfig
from specsched.policy import PolicyConfig
from specsched.schedule import parse_schedule

from .spec_helpers import assert_greedy_equal

pytestmark = pytest.mark.smollm2

PROMPTS = [
    "Explain in one paragraph why the sky is blue.",
    "Write a Python function that returns the n-th Fibonacci number.",
]


@pytest.mark.parametrize("per_request_k", [False, True])
def test_streaming_spec_equals_plain_greedy(smollm2_llm: Any, per_request_k: bool) -> None:
    params = SamplingParams(max_tokens=24, ignore_eos=True)
    ref = smollm2_llm.generate(PROMPTS, params, use_chat_template=True)
    # a 5-item schedule whose context boundary (48) is crossed mid-generation, window 16
    schedule = parse_schedule([[1, 1, 1, 47, 2], [1, 1, 48, 10**6, 4],
                               [2, 8, 1, 47, 0], [2, 8, 48, 10**6, 3]])
    spec = SpeculativeConfig(window=16, num_sink_tokens=4,
                             policy=PolicyConfig(schedule=schedule, per_request_k=per_request_k))
    llm = LLM("smollm2-135m", max_num_seqs=4, max_model_len=512, num_threads=1, speculative=spec)
    got = llm.generate(PROMPTS, params, use_chat_template=True)
    prompts = [o.prompt_token_ids for o in ref]
    gaps = assert_greedy_equal(smollm2_llm, prompts, [o.token_ids for o in ref],
                               [o.token_ids for o in got])
    stats = llm.last_run_stats
    assert stats is not None and stats.spec.num_draft_tokens > 0
    print(f"per_request_k={per_request_k}: near-tie gaps {gaps}, "
          f"acceptance {stats.spec.acceptance_rate:.2f}, K histogram {stats.k_histogram}")
