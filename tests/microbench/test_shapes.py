"""Shape design invariants: same Σctx within a Σ family, same max within a max family, separable."""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specsched.errors import UserError
from specsched.microbench.shapes import (
    MaxFamily,
    ShapeGrid,
    SumFamily,
    design_correlations,
    generate_shapes,
)


@settings(max_examples=60, deadline=None)
@given(
    batch_size=st.integers(4, 64),
    mean_levels=st.lists(st.integers(64, 8192), min_size=1, max_size=4, unique=True),
    max_levels=st.lists(st.integers(64, 8192), min_size=0, max_size=3, unique=True),
)
def test_groups_hold_their_statistic_fixed(
    batch_size: int, mean_levels: list[int], max_levels: list[int]
) -> None:
    grid = ShapeGrid(batch_size, tuple(mean_levels), tuple(max_levels), min_ctx=4)
    shapes = generate_shapes(grid)
    assert len(shapes) == len(mean_levels) * len(SumFamily) + len(max_levels) * len(MaxFamily)
    groups = defaultdict(list)
    for s in shapes:
        assert s.batch_size == batch_size
        assert min(s.contexts) >= grid.min_ctx
        groups[s.group].append(s)
    for level in mean_levels:
        members = groups[f"sum={batch_size * level}"]
        assert {s.total_ctx for s in members} == {batch_size * level}
    for level in max_levels:
        assert {s.max_ctx for s in groups[f"max={level}"]} == {level}


def test_same_sum_families_differ_in_max_and_median() -> None:
    shapes = [s for s in generate_shapes(ShapeGrid()) if s.group == "sum=4096"]
    assert len({s.max_ctx for s in shapes}) == len(shapes)
    assert len({s.median_ctx for s in shapes}) >= 4
    medians = [s.median_ctx for s in shapes]
    assert min(medians) < 512 < max(medians)  # median both below and above the mean


def test_default_design_separates_sum_from_max() -> None:
    corr = design_correlations(generate_shapes(ShapeGrid()))
    assert abs(corr["sum~batch_max"]) < 0.8
    assert abs(corr["batch_max~batch_median"]) < 0.8


@pytest.mark.parametrize(
    "kwargs",
    [{"batch_size": 2}, {"mean_levels": (), "max_levels": ()}, {"mean_levels": (100,)}],
)
def test_bad_grids_are_user_errors(kwargs: dict[str, object]) -> None:
    with pytest.raises(UserError):
        ShapeGrid(**kwargs)  # type: ignore[arg-type]
