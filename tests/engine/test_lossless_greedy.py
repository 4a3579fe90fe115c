"""Greedy speculative decoding == plain greedy decoding, on 1,008 randomized cases (issue 13).

Every drafter (streaming, ngram, model) x 6 random engine configurations x 2 generate calls x 28
prompts: random K schedules (static, batch-only, 5-item grids whose context boundaries are crossed
while decoding and whose batch boundaries are crossed as requests finish, K up to 8), per-request
K on and off, every context aggregator, batches of up to 16 with small token budgets (chunked
prefill mixed with decoding), output lengths 1..20 per request. After a genuine fp32 near-tie the
reference is forced onto the speculative token and the rest of the output is still compared
(`TeacherForcedReference`).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from .lossless_helpers import (
    DRAFTERS,
    TeacherForcedReference,
    prompt_pool,
    random_engine_case,
    run_cases,
    tiny_pair,
)

CONFIGS_PER_DRAFTER = 6
CALLS = 2
PROMPTS_PER_CALL = 28  # 3 x 6 x 2 x 28 = 1,008 cases


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return tiny_pair(tmp_path_factory.mktemp("lossless_greedy"))


@pytest.fixture(scope="module")
def pool() -> list[list[int]]:
    return prompt_pool(160, seed=13)


@pytest.fixture(scope="module")
def reference(pair: tuple[Path, Path], pool: list[list[int]]) -> TeacherForcedReference:
    return TeacherForcedReference(pair[0], pool)


@pytest.mark.parametrize("config", range(CONFIGS_PER_DRAFTER))
@pytest.mark.parametrize("drafter", DRAFTERS)
def test_random_cases_match_plain_greedy(drafter: str, config: int, pair: tuple[Path, Path],
                                         pool: list[list[int]],
                                         reference: TeacherForcedReference) -> None:
    rng = random.Random(f"{drafter}-{config}")
    case = random_engine_case(rng, drafter, pair[1])
    llm = case.build(pair[0])
    before = reference.cases
    drafted = 0
    for call in range(CALLS):
        prompts = rng.sample(pool, PROMPTS_PER_CALL)
        info = run_cases(llm, reference, prompts, rng, f"{drafter}/{config}/call {call}")
        drafted += info["drafts"]
        print(f"{drafter}/{config}/{call}: {case.spec.policy.schedule.entries()} "
              f"per_request={case.spec.policy.per_request_k} seqs={case.max_num_seqs} "
              f"budget={case.max_num_batched_tokens} {info}")
    assert reference.cases - before == CALLS * PROMPTS_PER_CALL
    if case.spec.policy.schedule.max_emitted_k > 0 and drafter != "ngram":
        assert drafted > 0  # the drafter really ran


def test_case_count_and_near_ties(reference: TeacherForcedReference) -> None:
    """Runs after the cases (file order; `make test` distributes whole files, `--dist loadfile`,
    since under per-test distribution this counted only its worker's cases and skipped): at
    least 1,000 compared, near-ties rare."""
    if reference.cases < len(DRAFTERS) * CONFIGS_PER_DRAFTER * CALLS * PROMPTS_PER_CALL:
        pytest.skip("run with the whole file to count the cases")
    assert reference.cases >= 1000
    print(f"{reference.cases} cases, {reference.near_ties} near-ties (teacher-forced)")
    assert reference.near_ties <= reference.cases // 20


def test_comparison_continues_after_a_near_tie(pair: tuple[Path, Path], pool: list[list[int]],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that took the other branch of a (pretended) tie at output 3 is compared to the end:
    its continuation must be the reference's continuation from the forced token."""
    from specsched.engine import LLM

    from . import lossless_helpers
    from .lossless_helpers import greedy

    ref = TeacherForcedReference(pair[0], pool[:4])
    prompt = pool[0]
    want = ref.ref[tuple(prompt)]
    forced = (want[3] + 1) % 128
    plain = LLM(str(pair[0]), max_model_len=128, num_threads=1)
    tail = plain.generate([prompt + want[:3] + [forced]], greedy(10))[0].token_ids
    got = [*want[:3], forced, *tail]
    monkeypatch.setattr(lossless_helpers, "top2_gap", lambda llm, tokens: 0.0)  # "a tie"
    ref.compare(prompt, got, "forced")
    assert ref.near_ties == 1
    wrong = [*got[:8], (got[8] + 1) % 128, *got[9:]]  # a difference after the tie
    with pytest.raises(AssertionError, match="differs at output 8"):
        monkeypatch.setattr(lossless_helpers, "top2_gap",
                            lambda llm, tokens: 0.0 if len(tokens) == len(prompt) + 3 else 1.0)
        ref.compare(prompt, wrong, "forced-wrong")
