from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from specsched.bench.canonical import experiment_hash, experiment_to_obj
from specsched.bench.experiment import DrafterChoice, ScenarioKind
from specsched.bench.load import experiment_from_obj, load_experiment
from specsched.errors import UserError

EXAMPLES = Path(__file__).parents[2] / "examples" / "experiments"


def base() -> dict:
    return {
        "arms": [{"name": "a", "k": 2}, {"name": "b", "schedule": [[1, 4, 3], [5, 64, 1]]}],
        "scenarios": [{"name": "s", "kind": "batch", "prompt_lens": [10, 20], "output_len": 4}],
    }


def test_k_arm_is_one_row_schedule_and_defaults() -> None:
    exp = experiment_from_obj(base())
    a = exp.arm("a")
    assert a.policy.schedule.entries(3) == [[1, 1, 2]]  # Schedule.constant(2): the tail inherits
    assert exp.baseline == "a"  # first arm by default
    assert exp.scenarios[0].concurrency == 2 and exp.scenarios[0].num_requests == 2
    assert a.drafter is DrafterChoice.BACKEND_DEFAULT


def test_k0_arm_is_no_spec_without_drafter() -> None:
    obj = base()
    obj["arms"].append({"name": "off", "k": 0})
    assert experiment_from_obj(obj).arm("off").drafter is DrafterChoice.NONE
    obj["arms"].append({"name": "ng", "k": 2, "drafter": "ngram"})
    assert experiment_from_obj(obj).arm("ng").drafter == "ngram"


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"arms": [{"name": "a", "k": 1, "schedule": [[1, 2, 1]]}]}, "exactly one of"),
        ({"arms": [{"name": "a"}]}, "exactly one of"),
        ({"arms": [{"name": "a", "k": 1, "colour": 3}]}, "unknown key(s) colour"),
        ({"arms": [{"name": "a", "k": 1}, {"name": "a", "k": 2}]}, "duplicate arm"),
        ({"baseline": "zzz"}, "baseline 'zzz' is not an arm"),
        ({"replicates": 0}, "replicates must be >= 1"),
        ({"arms": [{"name": "a", "schedule": [[2, 4, 1]]}]}, "must start at 1"),
        ({"arms": [{"name": "a", "k": 1, "ctx_agg": "avg"}]}, "not one of mean, median, max"),
        ({"scenarios": [{"name": "s", "kind": "batch", "output_len": 4}]}, "prompt_lens"),
        ({"scenarios": [{"name": "s", "kind": "zipf", "output_len": 4}]}, "kind: 'zipf'"),
        ({"scenarios": [{"name": "s", "kind": "random", "output_len": 4, "num_requests": 2}]},
         "input_len"),
        ({"scenarios": [{"name": "s", "kind": "prefix_repetition", "output_len": 4,
                         "num_requests": 2}]}, "prefix_len + suffix_len"),
        ({"backend": "tgi"}, "backend: 'tgi' is not one of"),
    ],
)
def test_invalid_experiments_name_the_problem(patch: dict, message: str) -> None:
    obj = {**base(), **patch}
    with pytest.raises(UserError, match=re.escape(message)):
        experiment_from_obj(obj)


def test_schedule_file_relative_to_experiment_and_hash(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps([[1, 8, 3]]))
    obj = {**base(), "arms": [{"name": "a", "schedule": "s.json"}]}
    (tmp_path / "e.json").write_text(json.dumps(obj))
    exp = load_experiment(tmp_path / "e.json")
    h1 = experiment_hash(exp)
    assert experiment_hash(experiment_from_obj(experiment_to_obj(exp))) == h1  # round trip
    (tmp_path / "s.json").write_text(json.dumps([[1, 8, 2]]))
    assert experiment_hash(load_experiment(tmp_path / "e.json")) != h1


def test_scenario_replicates_checked_and_hashed_only_when_given() -> None:
    exp = experiment_from_obj(base())
    scen = base()["scenarios"][0]
    own = experiment_from_obj({**base(), "scenarios": [{**scen, "replicates": 9}]})
    assert own.replicates_of(own.scenarios[0]) == 9 and own.max_replicates == 9
    assert exp.replicates_of(exp.scenarios[0]) == exp.replicates == exp.max_replicates
    assert "replicates" not in experiment_to_obj(exp)["scenarios"][0]  # older hashes hold
    assert experiment_hash(own) != experiment_hash(exp)
    assert experiment_hash(experiment_from_obj(experiment_to_obj(own))) == experiment_hash(own)
    for bad, message in ((0, "replicates must be >= 1, got 0"),
                         ("7", "`replicates` must be an integer")):
        with pytest.raises(UserError, match=re.escape(message)):
            experiment_from_obj({**base(), "scenarios": [{**scen, "replicates": bad}]})


def test_bad_yaml_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "e.yaml"
    bad.write_text("arms: [\n")
    with pytest.raises(UserError, match="invalid YAML"):
        load_experiment(bad)
    with pytest.raises(UserError, match="no such file"):
        load_experiment(tmp_path / "nope.yaml")


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_examples_load(path: Path) -> None:
    exp = load_experiment(path)
    assert {s.kind for s in exp.scenarios} <= set(ScenarioKind)
