"""Split-half persistence of per-request acceptance (`planner.acceptance_persistence`): requests
that differ only by sampling noise have none, requests whose rates truly differ keep it, the
profile stores it, and the workload simulation shrinks measured deviations by its square root."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import numpy as np
import pytest
from planner_tables import table_profile

from specsched.errors import UserError
from specsched.planner import AcceptancePoint, Profile, load_profile, save_profile
from specsched.planner.acceptance_persistence import persistence, split_half_tokens
from specsched.planner.workload_acceptance import request_acceptance
from specsched.policy.cost import StepCostModel


def _snapshots(rate: float, verifies: int, rng: np.random.Generator
               ) -> list[tuple[int, list[int], list[int]]]:
    """Cumulative snapshots of one request drafting K = 2 every step; each position accepted with
    probability `rate` given the one before it."""
    g, d, a = 1, [0, 0], [0, 0]
    out = [(g, list(d), list(a))]
    for _ in range(verifies):
        first = bool(rng.random() < rate)
        second = first and bool(rng.random() < rate)
        d = [d[0] + 1, d[1] + 1]
        a = [a[0] + first, a[1] + second]
        g += 1 + first + second
        out.append((g, list(d), list(a)))
    return out


def test_split_half_counts_each_half_of_the_verifies() -> None:
    steps = [(1, [0, 0], [0, 0]), (2, [1, 1], [0, 0]), (3, [2, 2], [0, 0]),
             (6, [3, 3], [1, 1]), (9, [4, 4], [2, 2])]
    assert split_half_tokens(steps) == (0.0, 2.0)
    assert split_half_tokens(steps[:3]) is None  # 2 verifies: too few per half


def test_noise_alone_has_little_persistence_and_real_differences_keep_it() -> None:
    rng = np.random.default_rng(0)
    same = [_snapshots(0.8, 14, rng) for _ in range(64)]  # one true rate: spread is noise
    mixed = [_snapshots(rate, 14, rng) for rate in np.linspace(0.3, 0.95, 64)]
    r_same, r_mixed = persistence(same), persistence(mixed)
    assert r_same is not None and r_mixed is not None
    assert r_same < 0.35
    assert r_mixed > 0.7
    assert persistence(same[:5]) is None  # too few requests for a correlation


def _profile(point: AcceptancePoint) -> Profile:
    cost = StepCostModel((0.010, 0.001, 0.0, 0.002, 0.0, 0.0, 0.0))
    base = table_profile((1,), (100, 1000), (0, 1, 2),
                         lambda b, c, k: 1000.0 * cost.predict(cost.features([c] * b, [k] * b)))
    return dataclasses.replace(base, acceptance=(point, dataclasses.replace(point, ctx=1000)))


def test_the_simulation_shrinks_deviations_by_the_root_of_persistence(tmp_path: Path) -> None:
    requests = ((1.0, 1.0), (0.5, 1.0))  # prefix rates 1.0 / 1.0 and 0.5 / 0.5; mean .75 / .75
    point = AcceptancePoint(100, (0.75, 1.0), 100, 2, requests=requests)
    full = _profile(point)
    quarter = _profile(dataclasses.replace(point, persistence=0.25))
    rng = random.Random(0)
    assert {request_acceptance(full, 100, None, rng) for _ in range(50)} == set(requests)
    shrunk = {request_acceptance(quarter, 100, None, rng) for _ in range(50)}
    firsts = sorted(round(a[0], 6) for a in shrunk)
    assert firsts == [0.625, 0.875]  # 0.75 -+ 0.25 * sqrt(0.25)
    path = tmp_path / "p.json"
    save_profile(quarter, path)
    assert load_profile(path).acceptance[0].persistence == 0.25
    obj = json.loads(path.read_text())
    obj["acceptance"][0]["persistence"] = 1.5
    path.write_text(json.dumps(obj))
    with pytest.raises(UserError, match=r"persistence must be in \[0, 1\], got 1.5"):
        load_profile(path)
