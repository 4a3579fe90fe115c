"""Input shapes: bare list, wrapper dict, vLLM speculative config, JSON/YAML file, inline JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specsched.schedule import ScheduleError, load_schedule, schedule_from_obj

ENTRIES = [[1, 4, 1, 1024, 2], [1, 4, 1025, 4096, 5], [5, 8, 1, 1024, 0], [5, 8, 1025, 4096, 1]]


def test_shapes() -> None:
    base = schedule_from_obj(ENTRIES)
    assert schedule_from_obj({"speculative_token_schedule": ENTRIES}) == base
    vllm = {
        "method": "ngram",
        "num_speculative_tokens": 3,
        "num_speculative_tokens_per_batch_size": [[1, 4, 5], [5, 8, 1]],
    }
    s = schedule_from_obj(vllm)
    assert s.max_k == 3 and s.k_for(1, 1) == 3 and s.k_for(6, 1) == 1
    assert schedule_from_obj(vllm, max_k=10).k_for(1, 1) == 5
    nested = {"speculative_config": {"speculative_token_schedule": ENTRIES}}
    assert schedule_from_obj(nested) == base
    with pytest.raises(ScheduleError, match="no schedule found"):
        schedule_from_obj({"foo": 1})
    with pytest.raises(ScheduleError, match="expected a list or an object"):
        schedule_from_obj(3)


def test_files_and_inline(tmp_path: Path) -> None:
    j = tmp_path / "s.json"
    j.write_text(json.dumps({"speculative_token_schedule": ENTRIES}))
    y = tmp_path / "s.yaml"
    y.write_text("speculative_token_schedule:\n" + "".join(f"  - {e}\n" for e in ENTRIES))
    inline = json.dumps(ENTRIES)
    assert load_schedule(j) == load_schedule(y) == load_schedule(inline)


@pytest.mark.parametrize(
    ("content", "suffix", "fragment"),
    [
        ("{not json", ".json", "invalid JSON"),
        ("a: [1, 2\n", ".yaml", "invalid YAML"),
        ("", ".json", "invalid JSON"),
    ],
)
def test_bad_files(tmp_path: Path, content: str, suffix: str, fragment: str) -> None:
    p = tmp_path / f"bad{suffix}"
    p.write_text(content)
    with pytest.raises(ScheduleError, match=fragment):
        load_schedule(p)


def test_missing_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ScheduleError, match="no such file"):
        load_schedule(tmp_path / "nope.json")
    with pytest.raises(ScheduleError, match="is a directory"):
        load_schedule(tmp_path)
    with pytest.raises(ScheduleError, match="inline schedule: invalid JSON"):
        load_schedule("[[1, 2")
