"""Compaction: always a valid schedule (via the schedule validator), optimal on small grids."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from specsched.planner import (
    Arm,
    GoodputTable,
    PlanConfig,
    compact,
    make_plan,
    schedule_from_compaction,
)
from specsched.planner.compact import block_choice
from specsched.schedule import parse_schedule, schedule_from_obj

axis = st.lists(st.integers(1, 200_000), min_size=1, max_size=6, unique=True).map(sorted)


@st.composite
def tables(draw: st.DrawFn) -> GoodputTable:
    bs = tuple(draw(st.lists(st.integers(1, 512), min_size=1, max_size=6, unique=True).map(sorted)))
    cs = tuple(draw(axis))
    ks = (0, *sorted(draw(st.sets(st.integers(1, 10), max_size=4))))
    g = draw(
        st.lists(
            st.floats(0.1, 1000.0),
            min_size=len(bs) * len(cs) * len(ks),
            max_size=len(bs) * len(cs) * len(ks),
        )
    )
    arr = np.asarray(g).reshape(len(bs), len(cs), len(ks))
    return GoodputTable(bs, cs, ks, arr, np.zeros(arr.shape[:2], dtype=bool))


@settings(max_examples=150, deadline=None)
@given(
    tables(), st.integers(1, 4), st.integers(1, 4), st.sampled_from([0.0, 0.05, 0.5]), st.booleans()
)
def test_plan_schedule_is_always_valid(
    table: GoodputTable, n: int, m: int, min_gain: float, batch_only: bool
) -> None:
    cfg = PlanConfig(max_batch_ranges=n, max_ctx_ranges=m, min_gain=min_gain, batch_only=batch_only)
    r = make_plan(table, cfg)
    s = r.schedule
    assert len(s.batch_ranges) <= n
    assert len(s.ctx_ranges) <= (1 if batch_only else m)
    # round trip through the validator, both as entries and as the JSON object we write
    again = parse_schedule(s.entries(3 if s.is_batch_only else 5))
    assert again.entries() == s.entries()
    key = (
        "num_speculative_tokens_per_batch_size" if s.is_batch_only else "speculative_token_schedule"
    )
    loaded = schedule_from_obj(
        {key: s.entries(3 if s.is_batch_only else 5), "num_speculative_tokens": s.max_emitted_k}
    )
    # the schedule serves every planned cell with the planned K
    for i, b in enumerate(table.batch_sizes):
        for j, c in enumerate(table.contexts):
            assert s.k_for(b, c) == loaded.k_for(b, c) == r.arms[Arm.PLAN].k_cells[i, j]
    # more freedom never scores worse (the objective is the mean fraction of oracle goodput)
    assert r.arms[Arm.PLAN].mean_of_oracle >= r.arms[Arm.STATIC].mean_of_oracle - 1e-9
    if min_gain == 0.0:
        assert r.arms[Arm.ORACLE].mean_of_oracle == 1.0
        assert r.arms[Arm.PLAN].mean_of_oracle >= r.arms[Arm.BATCH_ONLY].mean_of_oracle - 1e-9


def _brute_force(scores: np.ndarray, n: int, m: int) -> float:
    rows, cols, _ = scores.shape

    def partitions(size: int, limit: int):  # type: ignore[no-untyped-def]
        for g in range(1, min(limit, size) + 1):
            for cuts in itertools.combinations(range(1, size), g - 1):
                b = (0, *cuts, size)
                yield [(b[i], b[i + 1]) for i in range(len(b) - 1)]

    best = -np.inf
    for rp in partitions(rows, n):
        for cp in partitions(cols, m):
            total = sum(
                scores[r0:r1, c0:c1].sum(axis=(0, 1)).max() for r0, r1 in rp for c0, c1 in cp
            )
            best = max(best, total)
    return float(best)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 4),
    st.integers(1, 3),
    st.integers(1, 3),
    st.integers(1, 3),
    st.data(),
)
def test_compaction_is_optimal_on_small_grids(
    rows: int, cols: int, nk: int, n: int, m: int, data: st.DataObject
) -> None:
    vals = data.draw(
        st.lists(st.floats(0.0, 1.0), min_size=rows * cols * nk, max_size=rows * cols * nk)
    )
    scores = np.asarray(vals).reshape(rows, cols, nk)
    c = compact(scores, n, m)
    assert c.exact
    assert c.score >= _brute_force(scores, n, m) - 1e-9
    assert len(c.row_groups) <= n and len(c.col_groups) <= m
    # groups are contiguous and cover every row / column
    for groups, size in ((c.row_groups, rows), (c.col_groups, cols)):
        assert groups[0][0] == 0 and groups[-1][1] == size - 1
        assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(groups))


def test_heuristic_path_still_valid() -> None:
    rng = np.random.default_rng(0)
    scores = rng.random((7, 9, 4))
    c = compact(scores, 3, 3, max_enumerated=1)
    assert not c.exact
    assert len(c.row_groups) <= 3 and len(c.col_groups) <= 3
    table = GoodputTable(
        tuple(range(1, 8)),
        tuple(2**i for i in range(6, 15)),
        (0, 1, 2, 3),
        scores,
        np.zeros((7, 9), dtype=bool),
    )
    s = schedule_from_compaction(table, c, batch_only=False)
    assert parse_schedule(s.entries()).entries() == s.entries()
    assert c.score >= compact(scores, 1, 1).score - 1e-12


def test_block_choice_min_gain() -> None:
    sums = np.array([[1.0, 1.04], [1.0, 1.2]])
    val, idx = block_choice(sums, 0, 0.05)
    assert idx.tolist() == [0, 1] and val.tolist() == [1.0, 1.2]
