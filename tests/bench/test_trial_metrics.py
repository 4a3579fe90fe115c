"""Trial metrics on the trial's clock: a serving trial's requests start when a slot frees, so
each request's own times (from its submission) must be shifted by its `submit_s`."""

from __future__ import annotations

import pytest

from specsched.bench.backends.base import RequestResult, TrialResult


def test_decode_tok_s_spans_the_trial_not_one_request() -> None:
    # two slots, four requests of 11 tokens: the second pair starts at t=10 when the first ends.
    # each request: first token 1 s after submission, last 10 s after it.
    reqs = tuple(RequestResult(8, 11, ttft_s=1.0, latency_s=10.0, submit_s=s)
                 for s in (0.0, 0.0, 10.0, 10.0))
    trial = TrialResult(reqs, wall_s=20.0)
    # decode tokens 4 x 10 over first token (t=1) .. last token (t=20): 19 s
    assert trial.decode_tok_s == pytest.approx(40 / 19)
    assert trial.output_tok_s == pytest.approx(44 / 20)
    assert trial.metrics()["decode_tok_s"] == pytest.approx(40 / 19)


def test_decode_tok_s_of_one_wave_is_unchanged() -> None:
    reqs = (RequestResult(8, 5, 2.0, 6.0), RequestResult(8, 9, 3.0, 10.0))
    assert TrialResult(reqs, 10.0).decode_tok_s == pytest.approx(12 / 8)
