"""Schedule validation: a table of valid and invalid inputs, each error naming entry and rule."""

from __future__ import annotations

import pytest

from specsched.schedule import INF, ScheduleError, parse_schedule

GRID_5 = [
    [1, 4, 1, 1024, 2],
    [1, 4, 1025, 4096, 4],
    [5, 64, 1, 1024, 0],
    [5, 64, 1025, 4096, 3],
]


def test_five_item_grid_lookup() -> None:
    s = parse_schedule(GRID_5)
    assert s.arity == 5
    assert s.batch_ranges == ((1, 4), (5, 64))
    assert s.ctx_ranges == ((1, 1024), (1025, 4096))
    cases = [
        ((1, 1), 2),
        ((4, 1024), 2),
        ((4, 1025), 4),
        ((1, 4096), 4),
        ((1, 10**9), 4),  # last context range extends to infinity
        ((5, 1), 0),
        ((64, 2000), 3),
        ((65, 2000), 3),
        ((10**6, 1), 0),  # tail uses last row
        ((3, 0), 2),  # nothing computed yet: first context column
    ]
    for (bs, ctx), k in cases:
        assert s.k_for(bs, ctx) == k, (bs, ctx)


def test_three_item_and_gap_inheritance() -> None:
    s = parse_schedule([[1, 2, 3], [5, 8, 1]])
    assert s.arity == 3 and s.ctx_ranges == ((1, INF),)
    assert [s.k_for(b, 100) for b in range(1, 11)] == [3, 3, 3, 3, 1, 1, 1, 1, 1, 1]


def test_unsorted_entries_are_accepted_and_sorted() -> None:
    s = parse_schedule(list(reversed(GRID_5)))
    assert s == parse_schedule(GRID_5)


def test_max_k_clamps() -> None:
    s = parse_schedule(GRID_5, max_k=3)
    assert s.k_for(1, 2000) == 3
    assert s.k_grid[0][1] == 4  # as written
    assert s.k_values == (0, 2, 3)


def test_floats_are_refused_even_when_whole() -> None:
    with pytest.raises(ScheduleError, match=r"entry 0 item 0: must be an integer, got a float"):
        parse_schedule([[1.0, 4, 2]])


@pytest.mark.parametrize(
    ("entries", "fragment"),
    [
        ([], "no entries"),
        ("[[1,2,3]]", "expected a list"),
        ([[1, 2]], "entry 0"),
        ([[1, 2, 3], [3, 4, 1, 5, 2]], "entry 1"),
        ([[1, 2, True]], "boolean"),
        ([[1, 2, 1.5]], "entry 0 item 2"),
        ([[1, 2, "3"]], "must be an integer"),
        ([[0, 2, 3]], "1-indexed"),
        ([[3, 2, 3]], "greater than"),
        ([[1, 2, -1]], "K must be >= 0"),
        ([[2, 4, 1]], "must start at 1"),
        ([[1, 4, 1], [3, 8, 2]], "overlaps"),
        ([[1, 4, 1], [1, 4, 2]], "duplicates entry 0"),
        ([[1, 4, 2, 100, 1]], "must start at 1"),
        ([[1, 4, 1, 100, 1], [1, 4, 102, 200, 1]], "gap"),
        ([[1, 4, 1, 100, 1], [1, 4, 50, 200, 1]], "overlaps"),
        ([[1, 4, 1, 100, 1], [1, 4, 1, 100, 2]], "duplicate cell"),
        (
            [[1, 4, 1, 100, 1], [1, 4, 101, 200, 1], [5, 8, 1, 150, 1], [5, 8, 151, 200, 1]],
            "rectangular",
        ),
        ([[1, 4, 1, 100, 1], [1, 4, 101, 200, 1], [5, 8, 1, 100, 1]], "rectangular"),
    ],
)
def test_invalid_schedules_name_the_rule(entries: object, fragment: str) -> None:
    with pytest.raises(ScheduleError, match=fragment):
        parse_schedule(entries)


def test_error_names_entry_index() -> None:
    with pytest.raises(ScheduleError, match=r"^entry 2 "):
        parse_schedule([[1, 1, 1], [2, 2, 1], [3, 2, 1]])


def test_bad_max_k() -> None:
    with pytest.raises(ScheduleError, match="max_k"):
        parse_schedule([[1, 1, 1]], max_k=-1)


def test_entries_round_trip() -> None:
    s = parse_schedule(GRID_5)
    assert parse_schedule(s.entries(5)) == s
    b = parse_schedule([[1, 2, 3], [3, 9, 1]])
    assert b.entries(3) == [[1, 2, 3], [3, 9, 1]]
    assert parse_schedule(b.entries(5)).k_grid == b.k_grid
    with pytest.raises(ValueError):
        s.entries(3)


def test_lookup_names_the_cell() -> None:
    s = parse_schedule(GRID_5)
    k, bucket = s.lookup(70, 5000)
    assert tuple(bucket) == (5, 64, 1025, 4096) and k == s.k_for(70, 5000)
    with pytest.raises(ValueError):
        s.lookup(0, 10)
