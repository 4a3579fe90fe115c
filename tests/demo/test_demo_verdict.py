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
        band: list[float] | None = None, verdict: str | None = "win") -> dict[str, Any]:
    return {"predicted_speedup": pred, "ratio": ratio, "ci": ci, "predicted_band": band,
            "verdict": verdict}


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
