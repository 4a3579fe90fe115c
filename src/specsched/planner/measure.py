"""Engine-agnostic, resumable profiling driver.

`run_profile(path, grid, metadata, measure)` walks the grid and calls `measure(point)` for every
point not measured yet. Each finished point is appended to `<path>.partial.jsonl` (one JSON line,
flushed and fsynced) before the next one starts, so an interrupted run (Ctrl-C, crash, an exception
in `measure`) loses at most the point in flight. On restart the side file (and an existing
`path` profile with the same grid) is read back and measured points are skipped: nothing is
measured twice. When the grid is done, `path` is written atomically and the side file removed.
The engine plugs in as the `measure` callback (warm-up and repeats are its business: return a
`Stat.from_samples(...)`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
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
Measure = Callable[[MeasurePoint], Sample]
Progress = Callable[[int, int, MeasurePoint], None]  # (done, total, point just finished)


def grid_points(grid: ProfileGrid, with_acceptance: bool = True) -> list[MeasurePoint]:
    """Measurement order: by context (the costly KV set-up), then batch size, then K."""
    max_k = grid.ks[-1]
    out: list[MeasurePoint] = []
    for c in grid.contexts:
        if with_acceptance and max_k > 0:
            out.append(MeasurePoint(PointKind.ACCEPTANCE, 0, c, max_k))
        out.extend(
            MeasurePoint(PointKind.TIMING, b, c, k) for b in grid.batch_sizes for k in grid.ks
        )
    return out


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
    for point in points:
        if point in done:
            continue
        sample = measure(point)
        if _key(sample, max_k) != point:
            raise ValueError(f"measure({point}) returned a sample for {_key(sample, max_k)}")
        if isinstance(sample, AcceptancePoint):
            if len(sample.a) < max_k:
                raise ValueError(f"measure({point}) gave {len(sample.a)} positions, need {max_k}")
            _append(side, {"kind": PointKind.ACCEPTANCE.value, **acceptance_to_obj(sample)})
        else:
            _append(side, {"kind": PointKind.TIMING.value, **timing_to_obj(sample)})
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
