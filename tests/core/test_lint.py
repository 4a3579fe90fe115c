from __future__ import annotations

from specsched.schedule import LintCode, lint_schedule, parse_schedule


def codes(entries: list[list[int]], max_k: int | None = None) -> list[LintCode]:
    return [w.code for w in lint_schedule(parse_schedule(entries, max_k))]


def test_clean_schedule_has_no_warnings() -> None:
    assert (
        codes(
            [[1, 4, 1, 1024, 2], [1, 4, 1025, 4096, 4], [5, 8, 1, 1024, 0], [5, 8, 1025, 4096, 3]]
        )
        == []
    )


def test_k_decreasing_with_context() -> None:
    c = codes(
        [[1, 4, 1, 1024, 4], [1, 4, 1025, 4096, 2], [5, 8, 1, 1024, 1], [5, 8, 1025, 4096, 3]]
    )
    assert c == [LintCode.K_DECREASES_WITH_CONTEXT]


def test_gap_clamp_and_merge_candidate() -> None:
    assert codes([[1, 2, 3], [5, 8, 1]]) == [LintCode.BATCH_GAP]
    assert codes([[1, 2, 5], [3, 8, 1]], max_k=4) == [LintCode.CLAMPED]
    merge = codes([[1, 2, 3], [3, 8, 3]])
    assert merge == [LintCode.MERGE_CANDIDATE, LintCode.MERGE_CANDIDATE]
    # a single cell has no neighbours to merge with
    assert codes([[1, 8, 3]]) == []
