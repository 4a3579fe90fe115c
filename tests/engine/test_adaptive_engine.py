"""The adaptive K policy inside the engine: greedy output identical to plain greedy decoding for
every drafter (per request and per step), K actually varies, and what it learned freezes into a
schedule that the CLI writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specsched.cli import main
from specsched.engine import LLM
from specsched.engine.spec.config import SpeculativeConfig
from specsched.policy import AdaptiveConfig, PolicyConfig, PolicyKind
from specsched.schedule import Schedule, load_schedule

from .spec_helpers import assert_greedy_equal, greedy, make_sharp_pair, mixed_prompts

LLM_KW: dict[str, Any] = {"max_num_seqs": 4, "max_model_len": 256, "num_threads": 1}
MAX_TOKENS = 40


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory, tiny_hf_factory: Any) -> tuple[Path, Path]:
    return make_sharp_pair(tmp_path_factory.mktemp("adaptive"), tiny_hf_factory)


@pytest.fixture(scope="module")
def reference(pair: tuple[Path, Path]) -> tuple[LLM, list[list[int]], list[list[int]]]:
    llm = LLM(str(pair[0]), **LLM_KW)
    prompts = mixed_prompts(6, seed=11)
    return llm, prompts, [o.token_ids for o in llm.generate(prompts, greedy(MAX_TOKENS))]


def adaptive_policy(per_request: bool, prior_k: int = 2, drain: bool = False) -> PolicyConfig:
    return PolicyConfig(schedule=Schedule.constant(prior_k), kind=PolicyKind.ADAPTIVE,
                        per_request_k=per_request,
                        adaptive=AdaptiveConfig(max_k=4, warmup_steps=6, drain_aware=drain))


@pytest.mark.parametrize("per_request", [True, False])
@pytest.mark.parametrize("kind", ["streaming", "ngram", "model"])
def test_adaptive_greedy_equals_plain_greedy(kind: str, per_request: bool,
                                             pair: tuple[Path, Path], reference: Any) -> None:
    ref_llm, prompts, ref = reference
    drafter = f"model:{pair[1]}" if kind == "model" else kind
    spec = SpeculativeConfig.from_flags(drafter, adaptive_policy(per_request), window=8,
                                        num_sink_tokens=2)
    llm = LLM(str(pair[0]), speculative=spec, **LLM_KW)
    outs = llm.generate(prompts, greedy(MAX_TOKENS))
    assert_greedy_equal(ref_llm, prompts, ref, [o.token_ids for o in outs])
    stats = llm.last_run_stats
    assert stats is not None and stats.spec.num_draft_tokens > 0
    assert len(stats.k_histogram) >= 2  # K moved: the policy is not a constant
    learned = llm.engine.learned_schedule()
    assert learned is not None and learned.arity == 5


def test_drain_aware_greedy_equals_plain_greedy(pair: tuple[Path, Path], reference: Any) -> None:
    """K per request that finishes a draining batch soonest: the output stays the target's."""
    ref_llm, prompts, ref = reference
    spec = SpeculativeConfig.from_flags("streaming", adaptive_policy(True, drain=True),
                                        window=8, num_sink_tokens=2)
    llm = LLM(str(pair[0]), speculative=spec, **LLM_KW)
    outs = llm.generate(prompts, greedy(MAX_TOKENS))
    assert_greedy_equal(ref_llm, prompts, ref, [o.token_ids for o in outs])


@pytest.mark.smollm2
def test_generate_cli_adaptive_writes_the_learned_schedule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frozen = tmp_path / "learned.json"
    rc = main(["generate", "--prompt", "Count: 1 2 3 4 5 6 7 8 9 10 11 12", "--threads", "1",
               "--drafter", "ngram", "--policy", "adaptive", "--k", "2", "--per-request-k",
               "--max-new-tokens", "24", "--max-model-len", "256", "--json", "--freeze-to",
               str(frozen)])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["speculative"]["policy"] == "adaptive"
    assert out["speculative"]["learned_schedule"] == load_schedule(frozen).entries(5)


def test_profile_and_max_k_need_the_adaptive_policy(
    pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(["generate", "--model", str(pair[0]), "--prompt", "x", "--max-k", "3"])
    assert rc == 2 and "adaptive only" in capsys.readouterr().err
