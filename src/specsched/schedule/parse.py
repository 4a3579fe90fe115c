"""Validate raw entries into a `Schedule`. Every violation is a `ScheduleError` naming the entry."""

from __future__ import annotations

import itertools
from typing import Any

from specsched.errors import ScheduleError
from specsched.io import show_items, show_value
from specsched.schedule.model import INF, MAX_SPEC_TOKENS, Schedule


def _as_int(value: Any, where: str, hi: int = INF) -> int:
    """An integer item in [-INF, hi]. Only ints: a float is an error even when whole (1.0), as is
    a bool: a schedule holds counts, and a silently rounded K is a different schedule."""
    if isinstance(value, bool):
        raise ScheduleError(f"{where}: must be an integer, got a boolean ({value!r})")
    if not isinstance(value, int):
        kind = "a float" if isinstance(value, float) else type(value).__name__
        raise ScheduleError(f"{where}: must be an integer, got {kind} ({show_value(value)})")
    if value > hi:
        raise ScheduleError(f"{where}: {show_value(value)} is too large (at most {hi})")
    if value < -INF:
        raise ScheduleError(f"{where}: {show_value(value)} is too small")
    return value


def _check_max_k(max_k: Any) -> int | None:
    if max_k is None:
        return None
    value = _as_int(max_k, "max_k", MAX_SPEC_TOKENS)
    if value < 0:
        raise ScheduleError(f"max_k: must be >= 0, got {value}")
    return value


def _normalize_entries(entries: Any) -> tuple[int, list[tuple[int, ...]]]:
    if not isinstance(entries, (list, tuple)):
        raise ScheduleError(f"schedule: expected a list of entries, got {type(entries).__name__}")
    if len(entries) == 0:
        raise ScheduleError("schedule: has no entries")
    arity = 0
    rows: list[tuple[int, ...]] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, (list, tuple)):
            raise ScheduleError(f"entry {i}: expected a list, got {show_value(entry)}")
        if len(entry) not in (3, 5):
            raise ScheduleError(
                f"entry {i} {show_items(entry)}: must have 3 items [bs_lo, bs_hi, K] or 5 items "
                f"[bs_lo, bs_hi, ctx_lo, ctx_hi, K], got {len(entry)}"
            )
        if arity == 0:
            arity = len(entry)
        elif len(entry) != arity:
            raise ScheduleError(
                f"entry {i} {show_items(entry)}: mixes {len(entry)}-item and {arity}-item entries; "
                f"use one form for the whole schedule"
            )
        last = len(entry) - 1
        values = tuple(
            _as_int(v, f"entry {i} item {j}", MAX_SPEC_TOKENS if j == last else INF)
            for j, v in enumerate(entry)
        )
        rows.append(values)
    return arity, rows


def _check_ranges(i: int, e: tuple[int, ...]) -> None:
    pairs = [("bs", e[0], e[1])]
    if len(e) == 5:
        pairs.append(("ctx", e[2], e[3]))
    for name, lo, hi in pairs:
        if lo < 1:
            raise ScheduleError(
                f"entry {i} {list(e)}: {name}_lo must be >= 1 (ranges are 1-indexed)"
            )
        if lo > hi:
            raise ScheduleError(
                f"entry {i} {list(e)}: {name}_lo {lo} is greater than {name}_hi {hi}"
            )
    if e[-1] < 0:
        raise ScheduleError(f"entry {i} {list(e)}: K must be >= 0, got {e[-1]}")


def parse_schedule(entries: Any, max_k: Any = None) -> Schedule:
    """Validate a list of 3- or 5-item entries into a Schedule.

    Rules: integer items; 1-indexed inclusive ranges with lo <= hi; K >= 0; one arity; batch-size
    ranges sorted by start (order given does not matter), non-overlapping, the first starting at 1
    (gaps allowed); context ranges a contiguous partition from 1 shared by every batch-size range;
    no duplicate cells.
    """
    cap = _check_max_k(max_k)
    arity, rows = _normalize_entries(entries)
    for i, e in enumerate(rows):
        _check_ranges(i, e)
    if arity == 3:
        cells = {(e[0], e[1]): [((1, INF), e[2], i)] for i, e in enumerate(rows)}
        seen: dict[tuple[int, int], int] = {}
        for i, e in enumerate(rows):
            if (e[0], e[1]) in seen:
                raise ScheduleError(
                    f"entry {i} {list(e)}: duplicates entry {seen[(e[0], e[1])]} (same batch range)"
                )
            seen[(e[0], e[1])] = i
    else:
        cells = {}
        for i, e in enumerate(rows):
            cells.setdefault((e[0], e[1]), []).append(((e[2], e[3]), e[4], i))
    batch_ranges = sorted(cells)
    first_lo = batch_ranges[0][0]
    if first_lo != 1:
        i = cells[batch_ranges[0]][0][2]
        raise ScheduleError(
            f"entry {i}: the first batch-size range must start at 1, not {first_lo}"
        )
    for prev, cur in itertools.pairwise(batch_ranges):
        if cur[0] <= prev[1]:
            i = cells[cur][0][2]
            raise ScheduleError(
                f"entry {i}: batch-size range [{cur[0]}, {cur[1]}] overlaps [{prev[0]}, {prev[1]}]"
            )
    ctx_ranges: tuple[tuple[int, int], ...] | None = None
    first_row: tuple[int, int] | None = None
    grid: list[tuple[int, ...]] = []
    for br in batch_ranges:
        row = sorted(cells[br])
        for (a, _, ia), (b, _, ib) in itertools.pairwise(row):
            if a == b:
                raise ScheduleError(
                    f"entry {ib}: duplicate cell: batch range {list(br)}, context range {list(b)} "
                    f"already given by entry {ia}"
                )
        _check_contiguous(br, row)
        ranges = tuple(r for r, _, _ in row)
        if ctx_ranges is None:
            ctx_ranges, first_row = ranges, br
        elif ranges != ctx_ranges:
            raise ScheduleError(
                f"entry {row[0][2]}: batch range {list(br)} has context ranges "
                f"{[list(r) for r in ranges]} but batch range {list(first_row or ())} has "
                f"{[list(r) for r in ctx_ranges]}; every batch-size range needs the same context "
                f"ranges (a rectangular grid)"
            )
        grid.append(tuple(k for _, k, _ in row))
    assert ctx_ranges is not None
    return Schedule(tuple(batch_ranges), ctx_ranges, tuple(grid), arity, cap)


def _check_contiguous(br: tuple[int, int], row: list[tuple[tuple[int, int], int, int]]) -> None:
    (lo0, _), _, i0 = row[0]
    if lo0 != 1:
        raise ScheduleError(
            f"entry {i0}: context ranges of batch range {list(br)} must start at 1, not {lo0}"
        )
    for (prev, _, _), (cur, _, i) in itertools.pairwise(row):
        if cur[0] != prev[1] + 1:
            what = "overlaps" if cur[0] <= prev[1] else "leaves a gap after"
            raise ScheduleError(
                f"entry {i}: context range {list(cur)} {what} {list(prev)} in batch range "
                f"{list(br)}; context ranges must be contiguous (next ctx_lo = {prev[1] + 1})"
            )
