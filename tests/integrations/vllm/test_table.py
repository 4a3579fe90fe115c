"""The batch-only table handed to vLLM: every K the 2-D schedule emits, stock semantics."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specsched.errors import ScheduleError
from specsched.integrations.vllm.table import (
    coverage_table,
    dense_from_entries,
    emitted_reach,
    entries_from_dense,
    missing_from_lookup,
)
from specsched.schedule import INF, batch_only_projection, parse_schedule

S2D = parse_schedule(
    [
        [1, 4, 1, 1023, 2],
        [1, 4, 1024, INF, 4],
        [5, 256, 1, 1023, 1],
        [5, 256, 1024, INF, 2],
    ]
)


def test_dense_matches_vllm_semantics() -> None:
    # Gap 17-31 inherits K=3, tail inherits the last K, everything clamped to the cap.
    dense = dense_from_entries([[1, 16, 3], [32, 40, 2]], max_num_seqs=48, cap=2)
    assert dense[0] == 0
    assert dense[1:17] == [2] * 16
    assert dense[17:32] == [2] * 15
    assert dense[32:49] == [2] * 17
    dense = dense_from_entries([[1, 16, 3], [32, 40, 1]], max_num_seqs=48, cap=4)
    assert dense[16:18] == [3, 3] and dense[31] == 3 and dense[32] == 1 and dense[48] == 1


def test_entries_round_trip() -> None:
    dense = [0, 2, 2, 4, 1, 1]
    assert entries_from_dense(dense) == [[1, 2, 2], [3, 3, 4], [4, 5, 1]]
    assert dense_from_entries(entries_from_dense(dense), 5, 9) == dense


@pytest.mark.parametrize(
    ("max_num_seqs", "expected"),
    [
        (256, [[1, 3, 2], [4, 4, 4], [5, 254, 1], [255, 255, 2], [256, 256, 1]]),
        (16, [[1, 3, 2], [4, 4, 4], [5, 14, 1], [15, 15, 2], [16, 16, 1]]),
        (4, [[1, 2, 2], [3, 3, 4], [4, 4, 2]]),
    ],
)
def test_coverage_table_pins_each_k_at_its_reach(max_num_seqs: int, expected: list) -> None:
    assert coverage_table(S2D, max_num_seqs) == expected


def test_coverage_table_of_batch_only_schedule_is_its_projection() -> None:
    s = parse_schedule([[1, 4, 3], [5, 16, 2], [32, 64, 1]])
    table = coverage_table(s, 128)
    assert dense_from_entries(table, 128, 3) == dense_from_entries(batch_only_projection(s), 128, 3)


def test_emitted_reach_counts_gaps_and_tail() -> None:
    s = parse_schedule(
        [[1, 4, 1, 99, 1], [1, 4, 100, INF, 3], [8, 9, 1, 99, 0], [8, 9, 100, INF, 2]]
    )
    assert emitted_reach(s, 32) == {1: 7, 3: 7, 0: 32, 2: 32}
    assert emitted_reach(s, 6) == {1: 6, 3: 6}


def test_too_many_distinct_k_for_max_num_seqs() -> None:
    s = parse_schedule([[1, 1, 1, 9, 1], [1, 1, 10, 19, 2], [1, 1, 20, INF, 3]])
    with pytest.raises(ScheduleError, match="distinct K"):
        coverage_table(s, 2)
    assert missing_from_lookup(s, dense_from_entries(coverage_table(s, 3), 3, 3)) == []


def test_max_k_clamp_applies() -> None:
    s = S2D.clamped(3)
    table = coverage_table(s, 16)
    assert {k for _, _, k in table} == {1, 2, 3}


@st.composite
def schedules(draw: st.DrawFn) -> tuple:
    n_rows = draw(st.integers(1, 4))
    los = sorted(draw(st.sets(st.integers(2, 40), min_size=n_rows - 1, max_size=n_rows - 1)))
    bounds = [1, *los]
    n_cols = draw(st.integers(1, 3))
    ctx_los = [
        1,
        *sorted(draw(st.sets(st.integers(2, 5000), min_size=n_cols - 1, max_size=n_cols - 1))),
    ]
    entries = []
    for i, lo in enumerate(bounds):
        hi = bounds[i + 1] - 1 if i + 1 < len(bounds) else draw(st.integers(lo, 64))
        for j, clo in enumerate(ctx_los):
            chi = ctx_los[j + 1] - 1 if j + 1 < len(ctx_los) else INF
            entries.append([lo, hi, clo, chi, draw(st.integers(0, 6))])
    return entries, draw(st.integers(1, 48))


@settings(max_examples=200, deadline=None)
@given(schedules())
def test_every_emitted_k_is_in_the_table(case: tuple) -> None:
    entries, max_num_seqs = case
    s = parse_schedule(entries)
    try:
        table = coverage_table(s, max_num_seqs)
    except ScheduleError:
        assert len(emitted_reach(s, max_num_seqs)) > 1  # only when Ks outnumber batch sizes
        return
    dense = dense_from_entries(table, max_num_seqs, max(s.max_emitted_k, 1))
    assert missing_from_lookup(s, dense) == []
    # At most one batch size per distinct K differs from the stock projection.
    stock = dense_from_entries(batch_only_projection(s), max_num_seqs, max(s.max_emitted_k, 1))
    changed = sum(a != b for a, b in zip(dense[1:], stock[1:]))
    assert changed <= len(emitted_reach(s, max_num_seqs))
