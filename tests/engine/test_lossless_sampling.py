"""Speculative sampling samples the target's *joint* distribution over several tokens (issue 13).

Rejection sampling must be lossless per context: the second and third tokens are drawn by a
verify step whose target rows depend on the tokens before them. Each test samples N requests of
3 tokens and compares the joint (t1, t2, t3) with its exact value under plain sampling,
P(a, b, c) = p(a | x) p(b | x a) p(c | x a b), enumerated with fresh forwards (chi-square,
seeded, p > 0.001). With top-k 3, and with top-p (a nucleus whose size changes with the
context) while the schedule changes K between steps. A negative control shows the test can
tell: the same samples against the draft model's joint are rejected. Engine-level NaN logits
never crash a speculative run.
"""

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
from specsched.schedule import INF, Schedule, parse_schedule

from .lossless_helpers import tiny_pair

SEED_PROMPT = [7, 19, 33, 7, 19, 33, 7, 19, 33, 7]
N = 2000
ALPHA = 0.001


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return tiny_pair(tmp_path_factory.mktemp("lossless_sampling"))


@pytest.fixture(scope="module")
def prompt(pair: tuple[Path, Path]) -> list[int]:
    """The seed and the target's greedy continuation: n-gram lookup finds matches in it."""
    llm = LLM(str(pair[0]), max_model_len=64, num_threads=1)
    out = llm.generate([SEED_PROMPT], SamplingParams(max_tokens=6, ignore_eos=True))[0]
    return SEED_PROMPT + out.token_ids


def next_probs(llm: LLM, tokens: list[int], params: SamplingParams) -> torch.Tensor:  # [V]
    eng = llm.engine
    kv = KVCache(eng.model_cfg, 1, len(tokens) + 1, torch.float32, "cpu")
    ids = torch.tensor(tokens)
    logits = eng.model(ids, build_metadata([0], [0], [len(tokens)]), kv,
                       ids.new_tensor([len(tokens) - 1]))  # [1, V]
    return processed_probs(logits, [params])[0]


def exact_joint(llm: LLM, prompt: list[int], params: SamplingParams
                ) -> dict[tuple[int, int, int], float]:
    """P(t1, t2, t3) under plain sampling, by enumerating the support of each step."""
    out: dict[tuple[int, int, int], float] = {}
    p1 = next_probs(llm, prompt, params)
    for a in p1.nonzero().flatten().tolist():
        p2 = next_probs(llm, [*prompt, a], params)
        for b in p2.nonzero().flatten().tolist():
            p3 = next_probs(llm, [*prompt, a, b], params)
            for c in p3.nonzero().flatten().tolist():
                out[(a, b, c)] = float(p1[a] * p2[b] * p3[c])
    return out


def chi2_joint(samples: list[tuple[int, int, int]], joint: dict[tuple[int, int, int], float]
               ) -> float:
    """p-value of the sample counts against `joint`; cells expecting < 5 are pooled. A sample
    outside the support is an immediate failure (p = 0)."""
    n = len(samples)
    if any(s not in joint for s in samples):
        return 0.0
    big = [cell for cell, p in joint.items() if p * n >= 5]
    counts = {cell: 0 for cell in big}
    rest = 0
    for s in samples:
        if s in counts:
            counts[s] += 1
        else:
            rest += 1
    obs = [counts[c] for c in big]
    exp = [joint[c] * n for c in big]
    exp_rest = n - sum(exp)
    if exp_rest > 1e-6:
        obs, exp = [*obs, rest], [*exp, exp_rest]
    scale = sum(obs) / sum(exp)
    return float(chisquare(obs, [e * scale for e in exp]).pvalue)


def sample(pair: tuple[Path, Path], prompt: list[int], drafter: str, schedule: Schedule,
           params: dict[str, Any], max_tokens: int = 3) -> tuple[LLM, list[tuple[int, int, int]]]:
    policy = PolicyConfig(schedule=schedule)
    name = f"model:{pair[1]}" if drafter == "model" else drafter
    spec = SpeculativeConfig.from_flags(name, policy, window=4, num_sink_tokens=1)
    llm = LLM(str(pair[0]), max_model_len=48, max_num_seqs=64, max_num_batched_tokens=1024,
              speculative=spec, num_threads=1)
    reqs = [SamplingParams(max_tokens=max_tokens, seed=50_000 + i, ignore_eos=True, **params)
            for i in range(N)]
    outs = llm.generate([prompt] * N, reqs)
    stats = llm.last_run_stats
    assert stats is not None and 0 < stats.spec.num_accepted_tokens < stats.spec.num_draft_tokens
    return llm, [(o.token_ids[0], o.token_ids[1], o.token_ids[2]) for o in outs]


@pytest.mark.parametrize("drafter", ["model", "streaming", "ngram"])
def test_joint_of_three_tokens_with_top_k(drafter: str, pair: tuple[Path, Path],
                                          prompt: list[int]) -> None:
    params: dict[str, Any] = {"temperature": 1.0, "top_k": 3}
    llm, got = sample(pair, prompt, drafter, Schedule.constant(2), params)
    joint = exact_joint(llm, prompt, SamplingParams(**params))
    p = chi2_joint(got, joint)
    print(f"{drafter}: {len(joint)} cells, chi-square p = {p:.4f}")
    assert p > ALPHA
    if drafter == "model":  # negative control: the draft's own joint is another distribution
        draft = LLM(str(pair[1]), max_model_len=48, num_threads=1)
        assert chi2_joint(got, exact_joint(draft, prompt, SamplingParams(**params))) < ALPHA


@pytest.mark.parametrize("drafter", ["model", "ngram"])
def test_joint_with_top_p_and_k_changing_between_steps(drafter: str, pair: tuple[Path, Path],
                                                       prompt: list[int]) -> None:
    """A top-p nucleus (its size depends on the context) instead of a fixed top-k, and K = 2
    while the context is the prompt, 1 beyond it: a request whose first verify step rejects
    gets its third token from a step with another K. Four tokens are generated (K is capped so
    that no draft passes max_tokens) and the first three compared."""
    params: dict[str, Any] = {"temperature": 3.0, "top_p": 0.8}
    n = len(prompt)
    schedule = parse_schedule([[1, 64, 1, n, 2], [1, 64, n + 1, INF, 1]])
    llm, got = sample(pair, prompt, drafter, schedule, params, max_tokens=4)
    joint = exact_joint(llm, prompt, SamplingParams(**params))
    stats = llm.last_run_stats
    assert stats is not None and {1, 2} <= set(stats.k_histogram)
    p = chi2_joint(got, joint)
    print(f"{drafter} top-p: {len(joint)} cells, chi-square p = {p:.4f}")
    assert len(joint) > 10 and p > ALPHA


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_nan_logits_never_crash_a_speculative_run(temperature: float, pair: tuple[Path, Path],
                                                  prompt: list[int],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The target's logits get NaN rows, +inf entries and all -inf rows every few steps: the run
    completes, every token is in [0, V)."""
    spec = SpeculativeConfig.from_flags(f"model:{pair[1]}", PolicyConfig.constant(3))
    llm = LLM(str(pair[0]), max_model_len=64, max_num_seqs=8, speculative=spec, num_threads=1)
    model = llm.engine.model
    forward = model.forward
    calls = [0]

    def hostile(*args: Any, **kwargs: Any) -> torch.Tensor:
        logits = forward(*args, **kwargs).clone()  # [rows, V]
        calls[0] += 1
        kind = calls[0] % 4
        if kind == 1:
            logits[::2] = float("nan")
        elif kind == 2:
            logits[:, 5] = float("inf")
        elif kind == 3:
            logits[-1] = float("-inf")
        return logits

    monkeypatch.setattr(model, "forward", hostile)
    params = SamplingParams(max_tokens=12, temperature=temperature, seed=1, ignore_eos=True)
    outs = llm.generate([prompt, prompt[:3], prompt[:7]], params)
    for o in outs:
        assert len(o.token_ids) == 12 and all(0 <= t < 128 for t in o.token_ids)
