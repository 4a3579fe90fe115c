from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from bench_helpers import make_exp

from specsched.bench.analysis import Metric, analyze
from specsched.bench.backends import make_backend
from specsched.bench.dryrun import dry_run
from specsched.bench.experiment import BackendKind
from specsched.bench.results import read_results
from specsched.bench.runner import run_experiment
from specsched.bench.stats import (
    RatioCI,
    Verdict,
    bootstrap_ratio_ci,
    control_floor,
    order_bias,
    replicate_floor,
    summarize,
    verdict,
)


def test_summary() -> None:
    s = summarize([90.0, 100.0, 110.0])
    assert (s.n, s.median) == (3, 100.0)
    assert s.spread == pytest.approx(0.2)


def test_paired_ci_finds_a_true_ten_percent_effect() -> None:
    rng = np.random.default_rng(1)
    block = rng.normal(0, 0.05, 8)  # shared per replicate: pairing removes it
    base = 100 * np.exp(block + rng.normal(0, 0.02, 8))
    arm = 110 * np.exp(block + rng.normal(0, 0.02, 8))
    ci = bootstrap_ratio_ci(arm, base, paired=True)
    assert ci.lo < 1.10 < ci.hi and ci.lo > 1.05
    floor = replicate_floor([arm / np.exp(block), base / np.exp(block)])
    assert verdict(ci, floor) is Verdict.WIN
    assert verdict(bootstrap_ratio_ci(base, arm, paired=True), floor) is Verdict.LOSS


def test_identical_arms_are_within_noise_across_seeds() -> None:
    for seed in range(40):
        rng = np.random.default_rng(seed)
        a, b = 100 * np.exp(rng.normal(0, 0.03, (2, 6)))
        ci = bootstrap_ratio_ci(a, b, paired=True, seed=seed)
        assert verdict(ci, replicate_floor([a, b])) is Verdict.WITHIN_NOISE


def test_verdict_needs_the_whole_ci_beyond_the_floor() -> None:
    ci = RatioCI(1.08, 1.04, 1.12, 5, True)
    assert verdict(ci, 0.03) is Verdict.WIN
    assert verdict(ci, 0.05) is Verdict.WITHIN_NOISE
    assert verdict(ci, 0.03, higher_is_better=False) is Verdict.LOSS
    assert control_floor([0.95, 1.27, 1.0]) == pytest.approx(0.27)


def test_order_bias_detects_a_position_trend() -> None:
    rng = np.random.default_rng(0)
    pos, grp, val = [], [], []
    for rep in range(12):
        for p, arm in enumerate(["a", "b", "c"] if rep % 2 else ["c", "b", "a"]):
            pos.append(p)
            grp.append(arm)
            val.append(100 * (1 - 0.05 * p) * math.exp(rng.normal(0, 0.005)))
    ob = order_bias(pos, grp, val)
    assert ob.slope == pytest.approx(-0.05, abs=0.01) and ob.p_value < 1e-6
    assert ob.by_position[0] > 0 > ob.by_position[2]


def _run(tmp_path: Path, effects: dict[str, float], **over: object) -> object:
    exp = make_exp(replicates=8, warmup=0, backend_options={"noise": 0.02, "block_noise": 0.03,
                                                             "effects": effects}, **over)
    out = tmp_path / "r.jsonl"
    backend = make_backend(BackendKind.SIMULATED, dict(exp.backend_options))
    run_experiment(exp, dry_run(exp), backend, out)
    return analyze(read_results(out), Metric.OUTPUT_TOK_S)


def test_pipeline_finds_effect_and_ties_identical_arms(tmp_path: Path) -> None:
    # a: k=2 baseline; b: k=3 with its toy speed-up undone and +10% on top; c: == b's config
    arms = [{"name": "a", "k": 2}, {"name": "b", "k": 3, "drafter": "x"},
            {"name": "c", "k": 3, "drafter": "x"}, {"name": "d", "k": 2, "drafter": "y"}]
    an = _run(tmp_path, {"b": 1.10, "c": 1.10}, arms=arms)
    (s,) = an.scenarios  # type: ignore[attr-defined]
    rows = {r.arm: r for r in s.rows}
    assert s.control_ratios and s.control_ratios[0][:2] == ("b", "c")
    assert rows["d"].verdict is Verdict.WITHIN_NOISE  # same K as baseline, other drafter, no effect
    assert rows["b"].verdict is Verdict.WIN and rows["c"].verdict is Verdict.WIN
    assert rows["b"].ratio.lo > 1.0 + s.floor


def test_control_of_the_baseline_is_forced_within_noise(tmp_path: Path) -> None:
    arms = [{"name": "a", "k": 2}, {"name": "b", "schedule": [[1, 8, 2]]}]
    an = _run(tmp_path, {"b": 1.3}, arms=arms)  # a fake 30% "win" between identical configs
    row = next(r for r in an.scenarios[0].rows if r.arm == "b")  # type: ignore[attr-defined]
    assert row.same_config_as_baseline and row.verdict is Verdict.WITHIN_NOISE
    assert an.scenarios[0].control_floor > 0.2  # type: ignore[attr-defined]
    assert any("all arms are one configuration" in w for w in an.warnings)  # type: ignore[attr-defined]
