"""End to end: with temperature > 0, speculative decoding samples the target's distribution.

The 2nd and 3rd generated tokens (the first ones produced by a verify step with K = 2 drafts:
accepted drafts, recovered or bonus tokens) are compared with their exact marginal under plain
sampling, computed by enumerating the target's top-k continuations; chi-square at p > 0.01
(seeded, fixed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from scipy.stats import chisquare

from specsched.engine import LLM, KVCache, SamplingParams, build_metadata
from specsched.engine.sampling.sampler import processed_probs
from specsched.engine.spec.config import SpeculativeConfig
from specsched.policy import PolicyConfig

from .spec_helpers import make_sharp_pair

SEED_PROMPT = [7, 19, 33, 7, 19, 33, 7, 19]
PARAMS = dict(temperature=25.0, top_k=4, ignore_eos=True)  # scale 40 / T 25: spread over 4
N = 1500


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory, tiny_hf_factory: Any) -> tuple[Path, Path]:
    return make_sharp_pair(tmp_path_factory.mktemp("sharp_s"), tiny_hf_factory)


@pytest.fixture(scope="module")
def prompt(pair: tuple[Path, Path]) -> list[int]:
    """Seed + the target's greedy continuation: n-gram lookup then proposes likely tokens."""
    llm = LLM(str(pair[0]), max_model_len=32, num_threads=1)
    cont = llm.generate([SEED_PROMPT], SamplingParams(max_tokens=8, ignore_eos=True))[0]
    return SEED_PROMPT + cont.token_ids


def next_probs(llm: LLM, tokens: list[int]) -> torch.Tensor:  # [V] processed p
    eng = llm.engine
    kv = KVCache(eng.model_cfg, 1, len(tokens) + 1, torch.float32, "cpu")
    ids = torch.tensor(tokens)
    meta = build_metadata([0], [0], [len(tokens)])
    logits = eng.model(ids, meta, kv, ids.new_tensor([len(tokens) - 1]))  # [1, V]
    return processed_probs(logits, [SamplingParams(**PARAMS)])[0]  # type: ignore[arg-type]


def exact_marginals(llm: LLM, prompt: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """P(t2 = v), P(t3 = v) under plain sampling, summing over the top-k paths."""
    p1 = next_probs(llm, prompt)
    m2 = torch.zeros_like(p1)
    m3 = torch.zeros_like(p1)
    for a in p1.nonzero().flatten().tolist():
        p2 = next_probs(llm, [*prompt, a])
        m2 += p1[a] * p2
        for b in p2.nonzero().flatten().tolist():
            m3 += p1[a] * p2[b] * next_probs(llm, [*prompt, a, b])
    return m2, m3


def chi2_p(samples: list[int], probs: torch.Tensor) -> float:
    support = (probs * len(samples) >= 5).nonzero().flatten().tolist()
    counts = [sum(1 for s in samples if s == v) for v in support]
    rest = len(samples) - sum(counts)
    exp = [float(probs[v]) * len(samples) for v in support]
    exp_rest = len(samples) - sum(exp)
    obs = [*counts, rest] if exp_rest > 1e-9 else counts
    exp = [*exp, exp_rest] if exp_rest > 1e-9 else exp
    scale = sum(obs) / sum(exp)
    return float(chisquare(obs, [e * scale for e in exp]).pvalue)


@pytest.mark.parametrize("kind", ["model", "streaming", "ngram"])
def test_spec_sampling_matches_target_distribution(
    kind: str, pair: tuple[Path, Path], prompt: list[int]
) -> None:
    drafter = f"model:{pair[1]}" if kind == "model" else kind
    spec = SpeculativeConfig.from_flags(drafter, PolicyConfig.constant(2), window=4,
                                        num_sink_tokens=1)
    llm = LLM(str(pair[0]), max_model_len=32, max_num_seqs=64, max_num_batched_tokens=1024,
              speculative=spec, num_threads=1)
    params = [SamplingParams(max_tokens=3, seed=10_000 + i, **PARAMS) for i in range(N)]  # type: ignore[arg-type]
    outs = llm.generate([prompt] * N, params)
    stats = llm.last_run_stats
    assert stats is not None and stats.spec.num_draft_tokens > 0
    assert 0 < stats.spec.num_accepted_tokens < stats.spec.num_draft_tokens  # both branches hit
    m2, m3 = exact_marginals(llm, prompt)
    p2 = chi2_p([o.token_ids[1] for o in outs], m2)
    p3 = chi2_p([o.token_ids[2] for o in outs], m3)
    print(f"{kind}: chi-square p(t2)={p2:.3f} p(t3)={p3:.3f}, "
          f"acceptance {stats.spec.acceptance_rate:.2f}")
    assert p2 > 0.01 and p3 > 0.01


def test_sampling_k0_schedule_equals_no_spec_sample_for_sample(
    pair: tuple[Path, Path], prompt: list[int]
) -> None:
    """A K = 0 schedule is plain decoding: same seeded samples as no speculation at all."""
    params = SamplingParams(max_tokens=12, seed=5, **PARAMS)  # type: ignore[arg-type]
    plain = LLM(str(pair[0]), max_model_len=40).generate([prompt, prompt[:3]], params)
    spec = SpeculativeConfig(policy=PolicyConfig.constant(0))
    zero = LLM(str(pair[0]), max_model_len=40, speculative=spec).generate(
        [prompt, prompt[:3]], params
    )
    assert [o.token_ids for o in plain] == [o.token_ids for o in zero]
