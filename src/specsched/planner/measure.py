"""Engine-agnostic, resumable profiling driver.

`run_profile(path, grid, metadata, measure)` walks the grid in measurement units
(`grid_units`: a context's acceptance point alone; the timing points of every K at one batch
size and context together, so the engine can interleave them in rounds and a slow minute of
the machine hits every K alike) and calls `measure(points)` with a unit's points not measured
yet. Each finished unit's samples are appended to `<path>.partial.jsonl` (one JSON line each,
flushed and fsynced) before the next unit starts, so an interrupted run (Ctrl-C, crash, an
exception in `measure`) loses at most the unit in flight. On restart the side file (and an
existing `path` profile with the same grid) is read back and measured points are skipped:
nothing is measured twice. When the grid is done, `path` is written atomically and the side
file removed. The engine plugs in as the `measure` callback (warm-up, repeats and rounds are
its business: return one `Stat.from_samples(...)` per point).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence
from enum import Enum
from pathlib import Path
from typing import Any, NamedTuple

from specsched.errors import UserError
from specsched.planner.profile import (
    AcceptancePoint,
    Profile,
    ProfileGrid,
    ProfileMetadata,
    TimingPoint,
)
from specsched.planner.profile_io import (
    acceptance_from_obj,
    acceptance_to_obj,
    grid_to_obj,
    load_profile,
    metadata_to_obj,
    save_profile,
    timing_from_obj,
    timing_to_obj,
)

PROGRESS_SCHEMA = "specsched.profile-progress"


class PointKind(str, Enum):
    TIMING = "timing"  # T_verify / T_draft / T_nospec at (batch, ctx, K)
    ACCEPTANCE = "acceptance"  # acceptance per draft position at ctx (decoding real text)


class MeasurePoint(NamedTuple):
    kind: PointKind
    batch_size: int  # 0 for acceptance points
    ctx: int
    k: int  # acceptance points: the number of draft positions wanted (the grid's largest K)


Sample = TimingPoint | AcceptancePoint
Unit = tuple[MeasurePoint, ...]  # points measured together: one acceptance, or one (B, ctx)'s Ks
Measure = Callable[[Unit], Sequence[Sample]]  # a unit's samples, in its points' order
Progress = Callable[[int, int, MeasurePoint], None]  # (done, total, point just finished)


def grid_units(grid: ProfileGrid, with_acceptance: bool = True) -> list[Unit]:
    """Measurement order: by context (the costly KV set-up), then batch size; a context's
    acceptance point is a unit of its own, every K of one (batch size, context) one unit."""
    max_k = grid.ks[-1]
    out: list[Unit] = []
    for c in grid.contexts:
        if with_acceptance and max_k > 0:
            out.append((MeasurePoint(PointKind.ACCEPTANCE, 0, c, max_k),))
        out.extend(tuple(MeasurePoint(PointKind.TIMING, b, c, k) for k in grid.ks)
                   for b in grid.batch_sizes)
    return out


def grid_points(grid: ProfileGrid, with_acceptance: bool = True) -> list[MeasurePoint]:
    """Every point, in measurement order (`grid_units` flattened)."""
    return [p for unit in grid_units(grid, with_acceptance) for p in unit]


def progress_path(path: str | Path) -> Path:
    p = Path(path)
    return p.with_name(p.name + ".partial.jsonl")


def _key(sample: Sample, max_k: int) -> MeasurePoint:
    if isinstance(sample, TimingPoint):
        return MeasurePoint(PointKind.TIMING, sample.batch_size, sample.ctx, sample.k)
    return MeasurePoint(PointKind.ACCEPTANCE, 0, sample.ctx, max_k)


def _same_run(a: ProfileMetadata, b: ProfileMetadata) -> bool:
    fields = ("model", "drafter", "dtype", "device", "threads")
    return all(getattr(a, f) == getattr(b, f) for f in fields)


def _read_progress(side: Path, grid: ProfileGrid, metadata: ProfileMetadata) -> list[Sample]:
    """Samples in the side file; a torn last line (killed mid-write) is cut off the file."""
    raw = side.read_bytes()
    complete = raw[: raw.rfind(b"\n") + 1]
    if len(complete) != len(raw):
        with side.open("r+b") as fh:
            fh.truncate(len(complete))
    lines = [ln for ln in complete.decode("utf-8").splitlines() if ln.strip()]
    if not lines:
        return []
    try:
        header = json.loads(lines[0])
        rows = [json.loads(ln) for ln in lines[1:]]
    except json.JSONDecodeError:
        raise UserError(f"{side}: corrupt progress file; move it away to start over") from None
    if header.get("schema") != PROGRESS_SCHEMA or header.get("grid") != grid_to_obj(grid):
        raise UserError(
            f"{side}: an interrupted profile with another grid; rerun it with the same grid, or "
            f"move the file away to start over"
        )
    if header.get("metadata", {}) and not _same_run(
        ProfileMetadata(
            **{
                k: header["metadata"].get(k)
                for k in ("model", "drafter", "dtype", "device", "threads")
            }
        ),
        metadata,
    ):
        raise UserError(f"{side}: was measured with another model/drafter/dtype/device/threads")
    out: list[Sample] = []
    for i, row in enumerate(rows, start=2):
        where = f"{side} line {i}"
        if row.get("kind") == PointKind.ACCEPTANCE.value:
            out.append(acceptance_from_obj(row, where))
        else:
            out.append(timing_from_obj(row, where))
    return out


def _append(side: Path, obj: dict[str, Any]) -> None:
    with side.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(obj) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _check(point: MeasurePoint, sample: Sample, max_k: int) -> None:
    if _key(sample, max_k) != point:
        raise ValueError(f"measure({point}) returned a sample for {_key(sample, max_k)}")
    if isinstance(sample, AcceptancePoint) and len(sample.a) < max_k:
        raise ValueError(f"measure({point}) gave {len(sample.a)} positions, need {max_k}")


def run_profile(
    path: str | Path,
    grid: ProfileGrid,
    metadata: ProfileMetadata,
    measure: Measure,
    *,
    with_acceptance: bool = True,
    progress: Progress | None = None,
) -> Profile:
    """Measure every missing point of `grid` with `measure`, resumably (see module doc)."""
    target, side = Path(path), progress_path(path)
    max_k = grid.ks[-1]
    done: dict[MeasurePoint, Sample] = {}
    if target.exists():
        old = load_profile(target)
        if old.grid != grid:
            raise UserError(f"{target}: holds a profile with another grid; choose another output")
        if metadata.attention_q_tile is None:  # what the engine reported when it measured
            metadata = dataclasses.replace(metadata,
                                           attention_q_tile=old.metadata.attention_q_tile)
        old_samples: list[Sample] = [*old.timings, *old.acceptance]
        for s in old_samples:
            done[_key(s, max_k)] = s
    if side.exists():
        for s in _read_progress(side, grid, metadata):
            done[_key(s, max_k)] = s
    else:
        header = {
            "schema": PROGRESS_SCHEMA,
            "grid": grid_to_obj(grid),
            "metadata": metadata_to_obj(metadata),
        }
        _append(side, header)
    points = grid_points(grid, with_acceptance)
    count = sum(1 for p in points if p in done)
    for unit in grid_units(grid, with_acceptance):
        pending = tuple(p for p in unit if p not in done)
        if not pending:
            continue
        samples = list(measure(pending))
        if len(samples) != len(pending):
            raise ValueError(f"measure({pending}) returned {len(samples)} samples")
        for point, sample in zip(pending, samples, strict=True):
            _check(point, sample, max_k)
        for point, sample in zip(pending, samples, strict=True):
            kind = PointKind.ACCEPTANCE if isinstance(sample, AcceptancePoint) else \
                PointKind.TIMING
            obj = acceptance_to_obj(sample) if isinstance(sample, AcceptancePoint) else \
                timing_to_obj(sample)
            _append(side, {"kind": kind.value, **obj})
            done[point] = sample
            count += 1
            if progress is not None:
                progress(count, len(points), point)
    ordered = [done[p] for p in points if p in done]
    timings = tuple(s for s in ordered if isinstance(s, TimingPoint))
    acc = tuple(s for s in ordered if isinstance(s, AcceptancePoint))
    profile = Profile(metadata, grid, timings, acc)
    save_profile(profile, target)
    side.unlink(missing_ok=True)
    return profile
