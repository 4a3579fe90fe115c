"""Acceptance over a request's first H output tokens (`AcceptancePoint.horizons`): counted from
the profiler's snapshots, stored in the profile, and used for the planner's band, which must
widen where short outputs differ more than whole ones."""

from __future__ import annotations

import dataclasses
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from planner_tables import table_profile

from specsched.errors import UserError
from specsched.planner import AcceptancePoint, Profile, load_profile, save_profile
from specsched.planner.acceptance_ci import acceptance_bound, t_quantile
from specsched.planner.acceptance_horizon import horizon_counts, nearest_horizon, pooled_rates
from specsched.planner.acceptance_persistence import horizon_persistence, reliability
from specsched.planner.profile import HorizonCounts
from specsched.planner.workload_acceptance import request_acceptance


def _snapshots(accepts: list[int], k: int = 2) -> list[tuple[int, list[int], list[int]]]:
    """Cumulative snapshots of one request at static K: each verify accepts accepts[i] drafts."""
    g, d, a = 1, [0] * k, [0] * k
    out = [(g, list(d), list(a))]
    for acc in accepts:
        g += acc + 1
        d = [x + 1 for x in d]
        a = [a[j] + (acc > j) for j in range(k)]
        out.append((g, list(d), list(a)))
    return out


def test_counts_after_the_first_step_reaching_each_horizon() -> None:
    fast = _snapshots([2] * 10)  # 3 tokens per verify: generated 1, 4, 7, .. 31
    slow = _snapshots([0] * 20)  # 1 token per verify: generated 1, 2, .. 21
    hs = horizon_counts([fast, slow], k=2, width=8)
    assert [h.tokens for h in hs] == [8, 16, 24, 31]  # the last: the longest output
    assert hs[0].drafted == ((3, 3), (7, 7)) and hs[0].accepted == ((3, 3), (0, 0))
    assert hs[1].drafted == ((5, 5), (15, 15))
    assert hs[3].drafted == ((10, 10), (20, 20))  # the slow one stopped at 21: final counts
    assert horizon_counts([], k=2) == () and horizon_counts([[]], k=2) == ()


def test_pooled_rate_and_its_standard_error() -> None:
    rng = np.random.default_rng(1)
    n = 300
    d = rng.integers(5, 40, size=n)  # verifies per request
    p = rng.beta(2, 1, size=n)  # each request's own rate
    a = rng.binomial(d, p)
    h = HorizonCounts(48, tuple((int(x),) for x in d), tuple((int(x),) for x in a))
    rate, rel, used = pooled_rates(h, 1)
    assert used == n and rate[0] == pytest.approx(a.sum() / d.sum())
    idx = rng.integers(0, n, size=(4000, n))  # the bootstrap the linearization stands for
    boot = a[idx].sum(1) / d[idx].sum(1)
    assert rel[0] * rate[0] == pytest.approx(boot.std(), rel=0.1)
    one = HorizonCounts(48, ((4,),), ((2,),))
    assert pooled_rates(one, 1)[2] == 1  # a single request: no se
    assert pooled_rates(HorizonCounts(48, (), ()), 2)[2] == 0  # none stored: no rate, no error


def _point(early_spread: bool) -> AcceptancePoint:
    """Ten requests: over the first 16 tokens half accept everything and half nothing (or all
    alike); over the whole output all accept 90 %."""
    half = [(10, 10)] * 5 + [(10, 0)] * 5 if early_spread else [(10, 5)] * 10
    early = HorizonCounts(16, tuple((d, d) for d, _ in half), tuple((x, x) for _, x in half))
    whole = HorizonCounts(128, ((40, 40),) * 10, ((36, 36),) * 10)
    reqs = ((0.9, 1.0),) * 9 + ((0.8, 1.0),)
    return AcceptancePoint(512, (0.89, 1.0), 400, 10, requests=reqs, horizons=(early, whole))


def test_the_band_widens_over_a_short_horizon_where_requests_differ() -> None:
    p = _point(early_spread=True)
    assert acceptance_bound(p, 0.5, 16) == p.a
    whole = acceptance_bound(p, 0.1, None)[0]
    short = acceptance_bound(p, 0.1, 16)[0]
    assert whole == pytest.approx(0.89, abs=1e-3)  # alike over 128 tokens: no spread
    # pooled 0.5 over 16 tokens, se 0.5 / 3 relative 1/3 -> 0.89 (1 - t * 1/3)
    assert short == pytest.approx(0.89 * (1 + t_quantile(0.1, 9) / 3), abs=1e-3)
    assert acceptance_bound(_point(early_spread=False), 0.1, 16)[0] == pytest.approx(0.89)
    assert nearest_horizon(p, 20) is p.horizons[0] and nearest_horizon(p, 100) is p.horizons[1]
    # a new sample of m requests: se * sqrt(1 + n / m)
    drop = 0.89 - short
    assert 0.89 - acceptance_bound(p, 0.1, 16, sample=10)[0] == pytest.approx(
        drop * math.sqrt(2), abs=1e-3)
    with pytest.raises(ValueError, match="sample"):
        acceptance_bound(p, 0.1, 16, sample=0)
    drafts_only = AcceptancePoint(512, (0.8,), 100)  # binomial se over drafts, requests unknown
    assert acceptance_bound(drafts_only, 0.1, sample=4) == acceptance_bound(drafts_only, 0.1)


def test_points_without_horizons_keep_the_per_request_interval() -> None:
    p = dataclasses.replace(_point(True), horizons=())
    rates = np.asarray([0.9] * 9 + [0.8])
    want = 0.89 + t_quantile(0.1, 9) * rates.std(ddof=1) / math.sqrt(10)
    assert acceptance_bound(p, 0.1, 16)[0] == pytest.approx(want, abs=1e-5)


def _profile(point: AcceptancePoint) -> Profile:
    p = table_profile((1,), (512,), (0, 2), lambda b, c, k: 10.0 + k)
    return Profile(p.metadata, p.grid, p.timings, (point,))


def test_a_workload_draws_the_bound_of_its_own_output_length() -> None:
    p = dataclasses.replace(_point(True), persistence=0.0)
    prof = _profile(p)
    short = request_acceptance(prof, 512, None, random.Random(0), 0.1, horizon=16)
    long = request_acceptance(prof, 512, None, random.Random(0), 0.1, horizon=128)
    # persistence 0: every draw is the horizon's mean request (0.5 over 16 tokens, 0.9 over
    # 128), scaled by the bound over the point's own mean
    assert short[0] == pytest.approx(0.5 * acceptance_bound(p, 0.1, 16)[0] / 0.89, abs=1e-6)
    assert long[0] == pytest.approx(0.9 * acceptance_bound(p, 0.1, 128)[0] / 0.89, abs=1e-6)
    few = request_acceptance(prof, 512, None, random.Random(0), 0.1, horizon=16, sample=10)
    assert few[0] < short[0] - 0.05  # what 10 new requests pool: wider still


def _spread_draws(point: AcceptancePoint, horizon: int, n: int = 400) -> np.ndarray:  # [n]
    prof = _profile(point)
    rng = random.Random(3)
    return np.asarray([request_acceptance(prof, 512, None, rng, 0.5, horizon)[0]
                       for _ in range(n)])


def test_simulated_requests_spread_as_the_profiles_did_over_their_horizon() -> None:
    reliable = dataclasses.replace(_point(True), persistence=1.0)
    early, late = _spread_draws(reliable, 16), _spread_draws(reliable, 128)
    # over 16 tokens the measured requests accept all or nothing, over 128 all 90 %
    assert set(np.round(early, 6)) == {0.0, 1.0} and 0.3 < early.mean() < 0.7
    assert set(np.round(late, 6)) == {0.9}
    alike = _spread_draws(dataclasses.replace(_point(False), persistence=1.0), 16)
    assert set(np.round(alike, 6)) == {0.5}
    # without horizons: the whole-output deviations (0.9 or 0.8) around the mean, every length
    flat = _spread_draws(dataclasses.replace(reliable, horizons=()), 16)
    assert set(np.round(flat, 6)) == {0.9, 0.8}


def _halves(second: list[int]) -> AcceptancePoint:
    """Twenty requests at K = 1: 8 verifies over the first 16 tokens accepting a_i = i % 9,
    then 8 more up to 32 tokens accepting second[i]."""
    first = [i % 9 for i in range(20)]
    h16 = HorizonCounts(16, ((8,),) * 20, tuple((a,) for a in first))
    h32 = HorizonCounts(32, ((16,),) * 20, tuple((a + b,) for a, b in zip(first, second,
                                                                          strict=True)))
    return AcceptancePoint(512, (0.5,), 320, 20, persistence=0.42, horizons=(h16, h32))


def test_persistence_over_a_horizon_splits_its_tokens_in_halves() -> None:
    same = _halves([i % 9 for i in range(20)])  # each request accepts alike in both halves
    assert horizon_persistence(same, same.horizons[1]) == pytest.approx(1.0)
    flipped = _halves([8 - i % 9 for i in range(20)])  # opposite halves: nothing its own
    assert horizon_persistence(flipped, flipped.horizons[1]) == 0.0
    # the first horizon has no earlier one to split at: the whole output's persistence
    assert horizon_persistence(same, same.horizons[0]) == 0.42
    assert reliability([(1.0, 2.0)] * 3) is None  # too few requests
    # Spearman-Brown: a part of a third of the length steps up by 3
    pairs = [(x, x + y) for x, y in zip([0, 1, 0, 1, 2, 3, 2, 3], [0, 0, 1, 1, 0, 0, 1, 1],
                                        strict=True)]
    got = float(np.corrcoef(np.asarray(pairs).T)[0, 1])
    assert reliability(pairs, 3.0) == pytest.approx(3 * got / (1 + 2 * got), abs=1e-6)


def test_predict_arms_passes_horizon_and_sample_to_the_band() -> None:
    from specsched.planner.predict import predict_arms
    from specsched.planner.workload import workload_from_obj
    from specsched.policy import PolicyConfig

    prof = _profile(dataclasses.replace(_point(True), persistence=0.0))
    arms = {"K=2": PolicyConfig.constant(2)}

    def speedup(out: int, q: float, sample: int | None = None) -> float:
        w = workload_from_obj({"num_requests": 4, "concurrency": 4, "prompt_len": 512,
                               "output_len": out, "acceptance_spread": 0})
        return predict_arms(prof, w, arms, range(2), acceptance_quantile=q,
                            acceptance_sample=sample)["K=2"].decode_speedup.mean

    assert speedup(16, 0.1) < speedup(16, 0.5) - 0.05  # the early horizon: a wide band
    assert speedup(128, 0.1) == pytest.approx(speedup(128, 0.5), abs=0.02)  # alike late
    assert speedup(16, 0.1, sample=4) < speedup(16, 0.1) - 0.02


def test_horizons_round_trip_and_bad_counts_are_one_line_errors(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    save_profile(_profile(_point(True)), path)
    assert load_profile(path).acceptance[0].horizons == _point(True).horizons
    obj = json.loads(path.read_text())
    cases = [
        (lambda h: h[0]["accepted"][0].__setitem__(0, 11), r"0 <= accepted <= drafted"),
        (lambda h: h[0]["drafted"][0].append(3), r"request 0 needs 2 drafted"),
        (lambda h: h[1].__setitem__("tokens", 16), r"horizons must increase"),
        (lambda h: h[0]["drafted"].__setitem__(0, [1.5, 2]), r"horizons\[0\]\.drafted\[0\]"),
        (lambda h: h[0].pop("accepted"), r"horizons\[0\]\.accepted: missing"),
        (lambda h: h[0]["accepted"].pop(), r"10 drafted rows but 9 accepted rows"),
    ]
    for mutate, match in cases:
        bad = json.loads(json.dumps(obj))
        mutate(bad["acceptance"][0]["horizons"])
        path.write_text(json.dumps(bad))
        with pytest.raises(UserError, match=match) as exc:
            load_profile(path)
        assert "\n" not in str(exc.value)
