"""Property tests: valid schedules give a total lookup; 3-item == equivalent 5-item;
fuzzed malformed inputs only ever raise ScheduleError."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from specsched.schedule import INF, ScheduleError, parse_schedule


@st.composite
def grids(draw: st.DrawFn) -> tuple[list[list[int]], list[list[int]]]:
    """A valid 5-item schedule and its cells; batch ranges may have gaps."""
    n_rows = draw(st.integers(1, 5))
    n_cols = draw(st.integers(1, 5))
    bs: list[tuple[int, int]] = []
    lo = 1
    for _ in range(n_rows):
        hi = lo + draw(st.integers(0, 20))
        bs.append((lo, hi))
        lo = hi + 1 + draw(st.integers(0, 3))  # optional gap
    ctx: list[tuple[int, int]] = []
    clo = 1
    for _ in range(n_cols):
        chi = clo + draw(st.integers(0, 5000))
        ctx.append((clo, chi))
        clo = chi + 1
    ks = [[draw(st.integers(0, 8)) for _ in ctx] for _ in bs]
    entries = [
        [b[0], b[1], c[0], c[1], ks[r][j]] for r, b in enumerate(bs) for j, c in enumerate(ctx)
    ]
    return entries, ks


def _reference_k(entries: list[list[int]], bs: int, ctx: int) -> int:
    """Linear-scan reference: last row starting at or below bs; column containing ctx."""
    rows = sorted({(e[0], e[1]) for e in entries})
    row = [r for r in rows if r[0] <= bs][-1]
    cells = sorted((e[2], e[3], e[4]) for e in entries if (e[0], e[1]) == row)
    ctx = max(ctx, 1)
    for i, (lo, hi, k) in enumerate(cells):
        if lo <= ctx <= hi or i == len(cells) - 1:
            return k
    raise AssertionError("unreachable")


@settings(max_examples=200, deadline=None)
@given(
    grids(),
    st.lists(st.tuples(st.integers(1, 200), st.integers(0, 40000)), max_size=40),
    st.permutations(range(25)),
)
def test_total_lookup_matches_reference(
    g: Any, probes: list[tuple[int, int]], perm: list[int]
) -> None:
    entries, _ = g
    shuffled = [entries[i] for i in perm if i < len(entries)]
    s = parse_schedule(shuffled)
    for bs in range(1, 200, 7):
        for ctx in (0, 1, 2, 4999, 5000, 5001, 10**6):
            assert s.k_for(bs, ctx) == _reference_k(entries, bs, ctx)
    for bs, ctx in probes:
        assert s.k_for(bs, ctx) == _reference_k(entries, bs, ctx)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 25), st.integers(0, 8)), min_size=1, max_size=6))
def test_three_item_equals_one_column_five_item(rows: list[tuple[int, int]]) -> None:
    entries3: list[list[int]] = []
    lo = 1
    for width, k in rows:
        entries3.append([lo, lo + width, k])
        lo += width + 1
    entries5 = [[a, b, 1, INF, k] for a, b, k in entries3]
    s3, s5 = parse_schedule(entries3), parse_schedule(entries5)
    for bs in range(1, lo + 5):
        for ctx in (0, 1, 1000, 10**9):
            assert s3.k_for(bs, ctx) == s5.k_for(bs, ctx)


junk = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 50)
    | st.floats(allow_nan=True)
    | st.text(max_size=3),
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=30,
)


@settings(max_examples=500, deadline=None)
@given(
    junk, st.one_of(st.none(), st.integers(-2, 10), st.floats(allow_nan=True), st.text(max_size=2))
)
def test_fuzzed_input_only_raises_schedule_error(obj: Any, max_k: Any) -> None:
    try:
        s = parse_schedule(obj, max_k)
    except ScheduleError:
        return
    assert s.k_for(1, 1) >= 0  # valid ones look up


@settings(max_examples=300, deadline=None)
@given(
    grids(),
    st.integers(0, 30),
    st.integers(0, 4),
    st.one_of(
        st.integers(-3, 9000),
        st.booleans(),
        st.floats(allow_nan=True),
        st.none(),
        st.text(max_size=2),
    ),
)
def test_mutated_valid_schedules(g: Any, idx: int, item: int, value: Any) -> None:
    entries, _ = g
    mutated = [list(e) for e in entries]
    mutated[idx % len(mutated)][item] = value
    with contextlib.suppress(ScheduleError):
        parse_schedule(mutated)
