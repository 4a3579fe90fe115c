"""The `phases` scenario: requests alternate between repetitive and free-text prompts."""

from __future__ import annotations

import dataclasses

import pytest

from specsched.bench.canonical import experiment_to_obj
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


def test_phases_over_a_document_quote_it_or_run_on() -> None:
    """prefix_len > 0: one shared document; repetitive tails are windows of it (a quote whose
    continuation is still in the document), free tails are other text."""
    exp = _exp(input_len=100, range_ratio=0.1, prefix_len=80, output_len=5)
    shapes = request_shapes(exp.scenarios[0], exp.seed)  # type: ignore[attr-defined]
    assert [s.quote for s in shapes] == [True, True, False, False] * 2
    assert all(s.prefix_id == 0 and s.prefix_len == 80 and s.repeat_unit == 0 for s in shapes)
    words = corpus_words()
    prompts = build_prompts(shapes, words, seed=3)
    doc = prompts[0][:80]
    assert all(p[:80] == doc for p in prompts)
    for shape, prompt in zip(shapes, prompts):
        tail = prompt[80:]
        assert len(prompt) == shape.num_prompt_tokens
        at = [i for i in range(80 - len(tail) + 1) if doc[i:i + len(tail)] == tail]
        if shape.quote:  # a window of the document, with room for its continuation after it
            assert at and at[0] + len(tail) + shape.output_len <= 80
        else:
            assert not at


@pytest.mark.parametrize(("bad", "msg"), [
    ({"prefix_len": 60}, "every prompt longer than it"),
    ({"prefix_len": 20}, "every tail shorter than it"),
    ({"prefix_len": -1}, "prefix_len must be >= 0"),
    ({"kind": "random", "prefix_len": 30}, "random takes no prefix_len"),
])
def test_phases_document_bounds(bad: dict[str, object], msg: str) -> None:
    with pytest.raises(UserError, match=msg):
        _exp(**bad)


def test_a_document_of_a_recurring_passage() -> None:
    """document_unit > 0: the shared document is one passage repeated (what a quote then copies
    the target has read several times); the free tails are still other text, and without the
    knob the document is running text."""
    exp = _exp(input_len=100, range_ratio=0.1, prefix_len=80, output_len=5, document_unit=24)
    shapes = request_shapes(exp.scenarios[0], exp.seed)  # type: ignore[attr-defined]
    assert all(s.document_unit == 24 for s in shapes)
    words = corpus_words()
    prompts = build_prompts(shapes, words, seed=3)
    doc = prompts[0][:80]
    assert all(p[:80] == doc for p in prompts)
    assert doc[:24] == doc[24:48] == doc[48:72] and doc[72:] == doc[:8]
    assert len(set(doc[:24])) > 12  # a passage of running text, not one word
    for shape, prompt in zip(shapes, prompts):
        tail = prompt[80:]
        at = [i for i in range(80 - len(tail) + 1) if doc[i:i + len(tail)] == tail]
        assert bool(at) == shape.quote
    plain = build_prompts([dataclasses.replace(s, document_unit=0) for s in shapes], words, 3)
    assert plain[0][:24] != plain[0][24:48]
    assert experiment_to_obj(exp)["scenarios"][0]["document_unit"] == 24  # round trip
    assert experiment_from_obj(experiment_to_obj(exp)).scenarios == exp.scenarios  # type: ignore[attr-defined]


@pytest.mark.parametrize(("bad", "msg"), [
    ({"prefix_len": 80, "document_unit": 41}, "document_unit 41 needs"),
    ({"prefix_len": 80, "document_unit": -1}, "document_unit -1 needs"),
    ({"document_unit": 10}, "needs phases with prefix_len > 0"),
])
def test_document_unit_bounds(bad: dict[str, object], msg: str) -> None:
    with pytest.raises(UserError, match=msg):
        _exp(input_len=100, range_ratio=0.1, **bad)


def test_a_shuffled_document_is_the_same_passage_in_a_seeded_random_order() -> None:
    """document_shuffle: the recurring passage holds the same pieces as the unshuffled one in
    another order (a quote of it follows no local pattern), the same for the same seed; the
    quotes still copy the document."""
    kw: dict[str, object] = {"input_len": 100, "range_ratio": 0.1, "prefix_len": 80,
                             "output_len": 5, "document_unit": 24}
    exp, plain_exp = _exp(**kw, document_shuffle=True), _exp(**kw)
    shapes = request_shapes(exp.scenarios[0], exp.seed)  # type: ignore[attr-defined]
    plain_shapes = request_shapes(plain_exp.scenarios[0], plain_exp.seed)  # type: ignore[attr-defined]
    words = corpus_words()
    shuffled, plain = build_prompts(shapes, words, seed=3), build_prompts(plain_shapes, words, 3)
    doc, plain_doc = shuffled[0][:80], plain[0][:80]
    assert doc[:24] == doc[24:48] == doc[48:72]  # still one passage, recurring
    assert sorted(doc[:24]) == sorted(plain_doc[:24]) and doc[:24] != plain_doc[:24]
    assert build_prompts(shapes, words, seed=3) == shuffled
    for shape, prompt in zip(shapes, shuffled, strict=True):
        tail = prompt[80:]
        assert any(doc[i:i + len(tail)] == tail for i in range(80 - len(tail) + 1)) == shape.quote
    assert experiment_from_obj(experiment_to_obj(exp)).scenarios == exp.scenarios  # type: ignore[attr-defined]


@pytest.mark.parametrize(("bad", "msg"), [
    ({"prefix_len": 80, "document_shuffle": True}, "document_shuffle needs a document_unit"),
    ({"prefix_len": 80, "document_unit": 24, "document_shuffle": "yes"},
     "`document_shuffle` must be true or false"),
])
def test_document_shuffle_bounds(bad: dict[str, object], msg: str) -> None:
    with pytest.raises(UserError, match=msg):
        _exp(input_len=100, range_ratio=0.1, **bad)
