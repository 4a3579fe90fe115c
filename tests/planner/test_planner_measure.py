"""The resumable profiling driver: an interrupted profile continues; nothing lost or re-measured."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from specsched.errors import UserError
from specsched.planner import (
    AcceptancePoint,
    MeasurePoint,
    PointKind,
    ProfileGrid,
    ProfileMetadata,
    Stat,
    TimingPoint,
    grid_points,
    grid_units,
    load_profile,
    progress_path,
    run_profile,
    save_profile,
)
from specsched.planner.profile_io import timing_to_obj

GRID = ProfileGrid((1, 4), (256, 1024), (0, 2))
META = ProfileMetadata(model="toy", device="cpu")


class Boom(Exception):
    pass


class FakeEngine:
    """Deterministic samples; raises in the unit holding the `fail_at`-th point (from 1)."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.calls: list[MeasurePoint] = []
        self.units: list[tuple[MeasurePoint, ...]] = []
        self.fail_at = fail_at

    def __call__(self, unit: tuple[MeasurePoint, ...]) -> list[TimingPoint | AcceptancePoint]:
        if self.fail_at is not None and len(self.calls) < self.fail_at <= len(self.calls) + len(
                unit):
            raise Boom(f"interrupted in {unit}")
        self.calls.extend(unit)
        self.units.append(unit)
        return [self.sample(pt) for pt in unit]

    @staticmethod
    def sample(pt: MeasurePoint) -> TimingPoint | AcceptancePoint:
        if pt.kind is PointKind.ACCEPTANCE:
            return AcceptancePoint(pt.ctx, (0.9, 0.8), 50)
        t = 10.0 + pt.batch_size + pt.ctx / 256 + pt.k
        return TimingPoint(pt.batch_size, pt.ctx, pt.k, Stat(t, 0.5, 5))


def test_resume_after_interruption_loses_nothing(tmp_path: Path) -> None:
    out = tmp_path / "profile.json"
    total = len(grid_points(GRID))
    assert total == 2 + 2 * 2 * 2  # one acceptance point per context + timings
    first = FakeEngine(fail_at=6)
    with pytest.raises(Boom):
        run_profile(out, GRID, META, first)
    assert not out.exists() and progress_path(out).exists()
    assert len(first.calls) == 5
    second = FakeEngine()
    seen: list[int] = []
    profile = run_profile(out, GRID, META, second, progress=lambda d, t, p: seen.append(d))
    assert len(second.calls) == total - 5
    assert set(first.calls).isdisjoint(second.calls)  # nothing measured twice
    assert set(first.calls) | set(second.calls) == set(grid_points(GRID))
    assert seen == list(range(6, total + 1))
    assert profile.missing_points() == []
    assert load_profile(out) == profile
    assert not progress_path(out).exists()
    reference = run_profile(tmp_path / "ref.json", GRID, META, FakeEngine())
    assert profile.timings == reference.timings and profile.acceptance == reference.acceptance
    again = FakeEngine()
    run_profile(out, GRID, META, again)  # a finished profile re-measures nothing
    assert again.calls == []


def test_torn_last_line_is_dropped(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    with pytest.raises(Boom):
        run_profile(out, GRID, META, FakeEngine(fail_at=4))
    side = progress_path(out)
    with side.open("a") as fh:
        fh.write('{"kind": "timing", "batch_si')  # killed mid-write
    eng = FakeEngine()
    p = run_profile(out, GRID, META, eng)
    assert len(eng.calls) == len(grid_points(GRID)) - 3
    assert p.missing_points() == []


def test_other_grid_or_model_refuses_to_mix(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    with pytest.raises(Boom):
        run_profile(out, GRID, META, FakeEngine(fail_at=3))
    other = ProfileGrid((1, 8), (256, 1024), (0, 2))
    with pytest.raises(UserError, match="another grid"):
        run_profile(out, other, META, FakeEngine())
    with pytest.raises(UserError, match="another model"):
        run_profile(out, GRID, ProfileMetadata(model="other"), FakeEngine())
    header = json.loads(progress_path(out).read_text().splitlines()[0])
    assert header["schema"] == "specsched.profile-progress"


def test_units_group_every_k_of_one_batch_and_context(tmp_path: Path) -> None:
    eng = FakeEngine()
    run_profile(tmp_path / "p.json", GRID, META, eng)
    assert eng.units == grid_units(GRID)
    assert [len(u) for u in eng.units] == [1, 2, 2, 1, 2, 2]
    for unit in eng.units[1:3]:  # the timing units of ctx 256: one batch size each, every K
        assert {(p.batch_size, p.ctx) for p in unit} == {(unit[0].batch_size, 256)}
        assert [p.k for p in unit] == list(GRID.ks)


def test_resume_inside_a_unit_measures_only_its_missing_points(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    side = progress_path(out)
    with pytest.raises(Boom):
        run_profile(out, GRID, META, FakeEngine(fail_at=2))
    lines = side.read_text().splitlines()
    point = MeasurePoint(PointKind.TIMING, 1, 256, 0)
    sample = FakeEngine.sample(point)
    assert isinstance(sample, TimingPoint)
    row = {"kind": "timing", **timing_to_obj(sample)}
    side.write_text("\n".join([*lines, json.dumps(row)]) + "\n")  # K=0 of the unit done
    eng = FakeEngine()
    run_profile(out, GRID, META, eng)
    assert point not in eng.calls
    assert eng.units[0] == (MeasurePoint(PointKind.TIMING, 1, 256, 2),)


def test_wrong_sample_is_rejected(tmp_path: Path) -> None:
    def liar(unit: tuple[MeasurePoint, ...]) -> list[TimingPoint]:
        return [TimingPoint(1, 256, 0, Stat(1.0))]

    with pytest.raises(ValueError, match="returned a sample for"):
        run_profile(tmp_path / "p.json", ProfileGrid((4,), (256,), (0,)), META, liar)

    def short(unit: tuple[MeasurePoint, ...]) -> list[TimingPoint]:
        return []

    with pytest.raises(ValueError, match="returned 0 samples"):
        run_profile(tmp_path / "q.json", ProfileGrid((4,), (256,), (0,)), META, short)


def test_a_finished_profile_keeps_the_engine_s_attention_tile(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    done = run_profile(out, GRID, META, FakeEngine())
    save_profile(dataclasses.replace(done, metadata=dataclasses.replace(
        done.metadata, attention_q_tile=5)), out)
    assert load_profile(out).metadata.attention_q_tile == 5  # written and read back
    again = run_profile(out, GRID, META, FakeEngine())  # nothing to measure: metadata kept
    assert again.metadata.attention_q_tile == 5 and load_profile(out) == again
    bad = json.loads(out.read_text())
    bad["metadata"]["attention_q_tile"] = 0
    out.write_text(json.dumps(bad))
    with pytest.raises(UserError, match="attention_q_tile: must be >= 1"):
        load_profile(out)
