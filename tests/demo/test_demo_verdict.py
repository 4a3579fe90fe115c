"""The demo checks its predictions against its measurements (pure functions, no engine)."""

from __future__ import annotations

from typing import Any

import pytest

from specsched.demo.verdict import prediction_check, prediction_error, profile_noise_note
from specsched.planner import (
    Profile,
    ProfileGrid,
    ProfileMetadata,
    ProfileSource,
    Stat,
    TimingPoint,
)


def row(pred: float | None, ratio: float | None, ci: list[float] | None,
        band: list[float] | None = None, verdict: str | None = "win",
        replayed: float | None = None) -> dict[str, Any]:
    return {"predicted_speedup": pred, "ratio": ratio, "ci": ci, "predicted_band": band,
            "verdict": verdict, "replayed_speedup": replayed}


def test_the_error_is_prediction_over_measurement() -> None:
    assert prediction_error(row(2.2, 2.0, [1.8, 2.2])) == pytest.approx(0.1)
    assert prediction_error(row(1.0, None, None, verdict="baseline")) is None
    assert prediction_error(row(None, 1.5, [1.4, 1.6])) is None


def test_the_check_counts_misses_and_what_the_samples_explain() -> None:
    rows = [
        row(1.0, None, None, verdict="baseline"),
        row(2.094, 1.903, [1.690, 2.144], [1.95, 2.20]),  # +10 %, inside the CI
        row(2.094, 1.951, [1.842, 2.058], [1.95, 2.20]),  # +7.3 %, outside, band overlaps
        row(1.50, 1.49, [1.45, 1.53], [1.47, 1.52]),  # +0.7 %
        row(2.50, 1.60, [1.50, 1.70], [2.30, 2.70]),  # +56 %: a miss beyond both samples
    ]
    text = prediction_check(rows)
    assert "mean |pred/meas - 1| 18.6%" in text and "max 56.2%" in text
    assert "within ±7%: 1 of 4" in text
    assert "inside the measured 95% CI: 2 of 4" in text
    assert "acceptance band overlapping it: 3 of 4" in text
    assert "nothing to check" in prediction_check(rows[:1])
    assert "Model check" not in text  # no replay in these rows


def test_the_model_check_is_the_same_error_with_the_runs_acceptance() -> None:
    rows = [row(1.0, None, None, verdict="baseline"),
            row(2.2, 2.0, [1.8, 2.2], replayed=2.04),  # +10 % predicted, +2 % replayed
            row(1.5, 1.6, [1.5, 1.7], replayed=1.44)]  # -6.25 %, -10 %
    assert prediction_error(rows[1], "replayed_speedup") == pytest.approx(0.02)
    text = prediction_check(rows)
    assert "within ±7%: 1 of 2" in text
    model = text.split("Model check")[1]
    assert "mean |pred/meas - 1| 6.0%, max 10.0%; within ±7%: 1 of 2" in model


def test_units_that_stayed_noisy_are_named_in_the_verdict() -> None:
    # B=1 x 512: relative IQRs 0.25 / 0.30 (noisy); B=1 x 4096: 0.05 / 0.02 (quiet)
    spreads = {(1, 512, 0): 0.25, (1, 512, 1): 0.30, (1, 4096, 0): 0.05, (1, 4096, 1): 0.02}
    prof = Profile(ProfileMetadata(model="m", drafter="d", dtype="float32", device="cpu",
                                   threads=1, source=ProfileSource.ENGINE),
                   ProfileGrid((1,), (512, 4096), (0, 1)),
                   tuple(TimingPoint(b, c, k, Stat(40.0, 40.0 * r, 15))
                         for (b, c, k), r in spreads.items()))
    noisy = prof.noisy_units()
    assert [(b, c) for b, c, _ in noisy] == [(1, 512)]
    assert noisy[0][2] == pytest.approx(0.275)  # the median over its two Ks
    note = profile_noise_note(noisy)
    assert len(note) == 1 and "B=1 x ctx 512 (28%)" in note[0] and "4096" not in note[0]
    assert profile_noise_note(prof.noisy_units(threshold=0.5)) == []


def test_a_replicates_acceptance_is_pooled_over_its_arms() -> None:
    """`demo.replay.replicate_workload`: the same two requests in a K = 1 and a K = 2 arm; each
    request's rate per position is (accepted + w p) / (tested + w), p the profile's."""
    from specsched.bench.experiment import Scenario, ScenarioKind
    from specsched.demo.replay import PRIOR_WEIGHT, replicate_workload
    from specsched.planner import AcceptancePoint

    prof = Profile(ProfileMetadata(model="m"), ProfileGrid((1,), (512,), (0, 1, 2)),
                   tuple(TimingPoint(1, 512, k, Stat(40.0 + 10 * k, 0.0, 5)) for k in (0, 1, 2)),
                   (AcceptancePoint(512, (0.5, 0.5), 100),))
    reqs = [{"num_prompt_tokens": 500, "num_output_tokens": 4},
            {"num_prompt_tokens": 520, "num_output_tokens": 4}]
    k1 = {"requests": reqs, "extra": {"steps": [  # r0 accepts everything, r1 nothing
        [50.0, 16, [], [], []], [60.0, 0, [1], [1], [0]], [60.0, 0, [1], [0], [0]],
        [50.0, 16, [], [], []], [60.0, 0, [1], [0], [1]], [60.0, 0, [1], [0], [1]],
        [60.0, 0, [0], [0], [1]]]}}
    k2 = {"requests": reqs, "extra": {"steps": [
        [50.0, 16, [], [], []], [70.0, 0, [2], [2], [0]],
        [50.0, 16, [], [], []], [70.0, 0, [2], [0], [1]], [70.0, 0, [1], [0], [1]],
        [60.0, 0, [0], [0], [1]]]}}
    scen = Scenario(name="s", kind=ScenarioKind.RANDOM, input_len=500, num_requests=2,
                    concurrency=1, output_len=4)
    wl = replicate_workload([k1, k2], scen, prof, waves=False)
    assert wl is not None and wl.concurrency == 1
    assert [(r.prompt_len, r.output_len) for r in wl.requests] == [(500, 4), (520, 4)]
    w = PRIOR_WEIGHT
    # r0: position 0 tested 3 (accepted 2 of them: the K=1 arm's second step rejected), 1: 1
    r0 = wl.requests[0].phases[0][1]
    assert r0 == pytest.approx(((2 + 0.5 * w) / (3 + w), (1 + 0.5 * w) / (1 + w)))
    r1 = wl.requests[1].phases[0][1]  # tested 4 times at position 0, never accepted; 1 untested
    assert r1 == pytest.approx(((0.5 * w) / (4 + w), 0.5))
    unread = {"requests": reqs, "extra": {"steps": [[50.0, 16, [], []], [60.0, 0, [1], [1]]]}}
    assert replicate_workload([unread], scen, prof, waves=False) is None
