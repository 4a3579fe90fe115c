from __future__ import annotations

from pathlib import Path

import pytest
from planner_tables import table_profile

from specsched.errors import UserError
from specsched.planner import Stat, load_profile, profile_from_obj, profile_to_obj, save_profile


def _obj() -> dict:  # type: ignore[type-arg]
    return profile_to_obj(table_profile((1, 4), (256,), (0, 2), lambda b, c, k: 10.0 + b + k))


def test_round_trip_and_atomic_save(tmp_path: Path) -> None:
    p = table_profile((1, 4), (256, 1024), (0, 2), lambda b, c, k: 10.0 + b + k)
    path = tmp_path / "profile.json"
    save_profile(p, path)
    assert load_profile(path) == p
    assert sorted(x.name for x in tmp_path.iterdir()) == ["profile.json"]  # no temp files left


def test_stat_from_samples() -> None:
    s = Stat.from_samples([100.0, 1.0, 2.0, 3.0, 4.0, 5.0], warmup=1)
    assert (s.median, s.spread, s.n) == (3.0, 2.0, 5)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda o: o.update(schema="x"), "not a specsched profile"),
        (lambda o: o.update(schema_version=99), "schema_version 99 is not supported"),
        (lambda o: o["grid"].update(ks=[1, 2]), "must include K=0"),
        (lambda o: o["grid"].update(batch_sizes=[4, 1]), "sorted and distinct"),
        (lambda o: o["timings"][0].update(batch_size=3), "is not on the grid"),
        (lambda o: o["timings"].append(dict(o["timings"][0])), "is given twice"),
        (lambda o: o["timings"][0]["t_step_ms"].update(median=-1), "median must be a positive"),
        (lambda o: o["timings"][0].pop("t_step_ms"), r"timings\[0\].t_step_ms: missing"),
        (lambda o: o["acceptance"][0].update(a=[1.2, 0.5]), r"a\[0\]: acceptance must be in"),
        (lambda o: o["metadata"].update(source="magic"), "'magic' is not one of"),
    ],
)
def test_validation_errors_are_one_line(mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    obj = _obj()
    mutate(obj)
    with pytest.raises(UserError, match=message) as info:
        profile_from_obj(obj)
    assert "\n" not in str(info.value)


def test_incomplete_profile_is_not_plannable(tmp_path: Path) -> None:
    obj = _obj()
    obj["timings"].pop()
    p = profile_from_obj(obj)
    assert p.missing_points() == [(4, 256, 2)]
    with pytest.raises(UserError, match="1 of 4 grid points have no timing"):
        p.require_plannable()
    obj = _obj()
    obj["acceptance"] = []
    with pytest.raises(UserError, match="no acceptance data"):
        profile_from_obj(obj).require_plannable()


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such profile file"):
        load_profile(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(UserError, match="invalid JSON"):
        load_profile(bad)


def test_example_profiles_load_and_plan() -> None:
    from specsched.planner import CostModel, PlanConfig, goodput_table, make_plan

    root = Path(__file__).resolve().parents[2] / "examples" / "profiles"
    files = sorted(root.glob("*.profile.json"))
    assert files
    for f in files:
        p = load_profile(f)
        make_plan(goodput_table(CostModel.from_profile(p)), PlanConfig())
