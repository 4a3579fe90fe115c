"""`bench.step_rows`: a trial's step log read back per request — per-position counts by hand,
the places column, the admission replay of older logs, and logs that do not add up (None).
(The replay is checked against the engine's own places column in test_bench_engine_backend.)"""

from __future__ import annotations

from specsched.bench.step_rows import position_counts, request_places


def test_position_counts_by_hand() -> None:
    # one request, output 10: prefill (1 token); K=3 accept 1 (2 tokens); K=3 accept 3 (4);
    # K=2 accept 0 (1); K=1 accept 1 (room 1: 2 tokens)
    steps = [[50.0, 16, [], []], [90.0, 0, [3], [1]], [90.0, 0, [3], [3]],
             [80.0, 0, [2], [0]], [70.0, 0, [1], [1]]]
    counts = position_counts(steps, [10], 4)
    assert counts == [([4, 2, 1, 0], [3, 1, 1, 0])]


def test_places_column_is_used_as_logged() -> None:
    steps = [[50.0, 32, [], [], []], [60.0, 0, [2, 2], [2, 0], [1, 0]],
             [60.0, 0, [2], [1], [0]]]
    assert request_places(steps, [3, 4]) == [[], [1, 0], [0]]
    assert position_counts(steps, [3, 4], 2) == [([2, 1], [1, 0]), ([1, 1], [1, 1])]
    bad = [[50.0, 32, [], [], []], [60.0, 0, [2, 2], [2, 0], [1, 5]]]
    assert request_places(bad, [3, 4]) is None  # a place outside the trial


def test_admission_replay_of_an_old_log() -> None:
    # concurrency 2, three requests of 4 tokens: r0 and r1 prefill together; r0 accepts 2 and
    # leaves after one step, r2 prefills beside r1 and decodes after it in the rows (r1 has
    # room for no draft in the last step)
    steps = [[50.0, 32, [], []], [60.0, 0, [2, 2], [2, 0]], [60.0, 16, [2], [0]],
             [60.0, 0, [0, 2], [0, 2]]]
    assert request_places(steps, [4, 4, 4]) == [[], [0, 1], [1], [1, 2]]


def test_an_old_log_that_does_not_add_up_is_not_read() -> None:
    # a request would emit past its output length
    assert request_places([[50.0, 16, [], []], [60.0, 0, [3], [3]]], [3]) is None
    # more decoding rows than requests in the trial
    assert request_places([[50.0, 16, [], []], [60.0, 0, [1, 1], [0, 0]]], [4]) is None
    # a request left unfinished
    assert request_places([[50.0, 16, [], []], [60.0, 0, [1], [0]]], [5]) is None
    assert position_counts([[50.0, 16, [], []], [60.0, 0, [1], [0]]], [5], 2) is None
