"""The `phases` scenario: requests alternate between repetitive and free-text prompts."""

from __future__ import annotations

import pytest

from specsched.bench.load import experiment_from_obj
from specsched.bench.workload import request_shapes
from specsched.corpus import build_prompts, corpus_words
from specsched.errors import UserError


def _exp(**scenario: object) -> object:
    base = {"name": "p", "kind": "phases", "input_len": 60, "range_ratio": 0.2,
            "num_requests": 8, "concurrency": 2, "output_len": 8, "phase_len": 2,
            "repeat_unit": 6}
    return experiment_from_obj({"arms": [{"name": "a", "k": 0}],
                                "scenarios": [{**base, **scenario}]})


def test_phases_alternate_repetitive_and_free_text() -> None:
    exp = _exp()
    shapes = request_shapes(exp.scenarios[0], exp.seed)  # type: ignore[attr-defined]
    assert [s.repeat_unit for s in shapes] == [6, 6, 0, 0, 6, 6, 0, 0]
    prompts = build_prompts(shapes, corpus_words(), seed=1)
    rep, free = prompts[0], prompts[2]
    assert len(rep) == shapes[0].num_prompt_tokens and rep[:6] == rep[6:12] == rep[12:18]
    assert free[:6] != free[6:12]


@pytest.mark.parametrize(("bad", "msg"), [({"phase_len": 0}, "phase_len >= 1"),
                                          ({"repeat_unit": 60}, "repeat_unit < input_len")])
def test_phases_need_a_phase_length_and_a_short_unit(bad: dict[str, int], msg: str) -> None:
    with pytest.raises(UserError, match=msg):
        _exp(**bad)
