"""Acceptance along the output (`AcceptancePoint.by_output`): measured per segment of generated
tokens, stored in the profile, and used by the workload simulation, so a workload whose outputs
are shorter than the profile's is predicted with the acceptance its tokens reach."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from planner_tables import table_profile

from specsched.errors import UserError
from specsched.planner import AcceptancePoint, Profile, load_profile, save_profile
from specsched.planner.acceptance_ci import output_segments
from specsched.planner.predict import predict_arms
from specsched.planner.profile import HorizonCounts, OutputSegment
from specsched.planner.workload import workload_from_obj
from specsched.planner.workload_acceptance import output_phases
from specsched.policy import PolicyConfig
from specsched.policy.cost import CTX_UNIT, StepCostModel


def _steps(per_step: list[tuple[int, int, int]]) -> list[tuple[int, list[int], list[int]]]:
    """Cumulative snapshots from (tokens emitted, drafted at K=2, accepted prefix count) steps:
    each step drafts 2 positions; `acc` of them accepted from the first on."""
    g, d, a = 1, [0, 0], [0, 0]  # the prefill step's snapshot: one token, no drafts
    out = [(g, list(d), list(a))]
    for emitted, drafted, acc in per_step:
        g += emitted
        d = [d[0] + drafted, d[1] + drafted]
        a = [a[0] + (acc >= 1), a[1] + (acc >= 2)]
        out.append((g, list(d), list(a)))
    return out


def test_segments_pool_each_steps_drafts_by_tokens_generated_before_it() -> None:
    # request: 10 steps accepting nothing (1 token each), then 10 accepting both drafts (3 tokens
    # each); width 10. Tokens generated before each step: 1..10 rejecting, then 11, 14, 17, 20..
    # -> [0, 10): 9 rejecting steps; [10, 20): 1 rejecting + 3 accepting; [20, ..): accepting
    steps = _steps([(1, 1, 0)] * 10 + [(3, 1, 2)] * 10)
    segs = output_segments([steps, steps], k=2, width=10)
    assert [s.start for s in segs] == [0, 10, 20]
    assert segs[0].verifies == 18 and segs[0].a == (0.0, 0.0)  # 9 steps x 2 requests
    assert segs[1].verifies == 2 * 4 and segs[1].a == pytest.approx((0.75, 1.0))
    assert segs[2].a == (1.0, 1.0)


def test_thin_segments_merge_and_a_flat_profile_has_none() -> None:
    steps = _steps([(1, 1, 0)] * 12 + [(3, 1, 2)] * 2)  # the last segment: 2 steps x 2 requests
    segs = output_segments([steps, steps], k=2, width=10)
    assert [s.start for s in segs] == [0, 10]  # [10, 20) absorbed the thin tail
    assert output_segments([steps], k=2, width=100) == ()  # one segment: nothing beyond `a`
    assert output_segments([], k=2) == ()


def _profile(segments: tuple[OutputSegment, ...]) -> Profile:
    cost = StepCostModel((0.010, 0.001, 0.0, 0.002, 0.0, 0.0, 0.0))

    def t_ms(b: int, c: int, k: int) -> float:
        return 1000.0 * float(np.dot(cost.coef, (1.0, b, b * c / CTX_UNIT, b * k, 0, k, 0, 0)))

    p = table_profile((1, 4), (100, 1000), (0, 1, 2), t_ms)
    acc = tuple(AcceptancePoint(c, (0.75, 0.75), 100, by_output=segments) for c in (100, 1000))
    return Profile(p.metadata, p.grid, p.timings, acc)


# the first 20 tokens accept half as often as the profile's mean; the rest as much again
RISING = (OutputSegment(0, 50, (0.5, 0.5)), OutputSegment(20, 50, (1.0, 1.0)))


def test_phases_scale_a_request_by_its_segment() -> None:
    phases = output_phases(_profile(RISING), 500, (0.8, 0.8))
    assert [start for start, _ in phases] == [0, 20]
    ref = np.asarray([0.75, 0.625])  # verify-weighted mean of the segments' prefix rates
    for (_, a), seg in zip(phases, RISING, strict=True):
        want = np.clip(np.asarray([0.8, 0.64]) * np.cumprod(seg.a) / ref, 0, 1)
        assert np.cumprod(a) == pytest.approx(want)
    assert output_phases(_profile(()), 500, (0.8, 0.8)) == ((0, (0.8, 0.8)),)


def test_a_request_drawn_over_its_horizon_is_scaled_by_the_segments_it_reaches() -> None:
    # with horizons stored, `a` is the request's mean over its first `horizon` tokens: the
    # reference is the segments' mean over that span only (here [0, 20) and half of [20, 40))
    base = _profile(RISING)
    stored = (HorizonCounts(16, ((1, 1),), ((1, 1),)), HorizonCounts(40, ((1, 1),), ((1, 1),)))
    prof = dataclasses.replace(base, acceptance=tuple(
        dataclasses.replace(p, horizons=stored) for p in base.acceptance))
    first = output_phases(prof, 500, (0.8, 0.8), horizon=20)
    assert np.cumprod(first[0][1]) == pytest.approx([0.8, 0.64])  # [0, 20) is its own mean
    half = output_phases(prof, 500, (0.8, 0.8), horizon=30)
    ref = (50 * np.cumprod(RISING[0].a) + 25 * np.cumprod(RISING[1].a)) / 75
    assert np.cumprod(half[0][1]) == pytest.approx(
        np.asarray([0.8, 0.64]) * np.cumprod(RISING[0].a) / ref)
    # without stored horizons `a` is the whole output's mean, whatever the request's length
    assert output_phases(base, 500, (0.8, 0.8), horizon=20) == output_phases(base, 500,
                                                                             (0.8, 0.8))


def test_short_outputs_are_predicted_with_the_acceptance_they_reach() -> None:
    spec = {"num_requests": 4, "concurrency": 4, "arrival": "waves", "prompt_len": 500,
            "acceptance_spread": 0, "prefill_tokens": 0}
    arms = {"K=2": PolicyConfig.constant(2)}

    def speedup(profile: Profile, out: int) -> float:
        w = workload_from_obj({**spec, "output_len": out})
        return predict_arms(profile, w, arms, seeds=range(4))["K=2"].decode_speedup.mean

    flat, rising = _profile(()), _profile(RISING)
    assert speedup(rising, 16) < speedup(flat, 16) - 0.05  # inside the low segment
    assert speedup(rising, 200) > speedup(flat, 200) + 0.05  # mostly the high one


def test_segments_round_trip_and_bad_segments_are_one_line_errors(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    save_profile(_profile(RISING), path)
    assert load_profile(path).acceptance[0].by_output == RISING
    obj = json.loads(path.read_text())
    obj["acceptance"][0]["by_output"][1]["start"] = 0
    path.write_text(json.dumps(obj))
    with pytest.raises(UserError, match=r"by_output segments must start at 0 and increase"):
        load_profile(path)
    obj["acceptance"][0]["by_output"] = [{"start": 0, "verifies": 3}]
    path.write_text(json.dumps(obj))
    with pytest.raises(UserError, match=r"acceptance\[0\]\.by_output\[0\]\.a: missing"):
        load_profile(path)
    with pytest.raises(UserError, match="verifies >= 1"):
        dataclasses.replace(_profile(()).acceptance[0], by_output=(OutputSegment(0, 0, (1, 1)),))
