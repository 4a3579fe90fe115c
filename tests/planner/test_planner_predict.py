"""Workload prediction: the simulator on workloads with hand-computed answers (a wave with a
straggler, closed-loop refill), workload files and their one-line errors, `predict_arms` on a
profile made from a known cost model, and `specsched plan --workload`."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from planner_tables import table_profile

from specsched.cli import main
from specsched.errors import UserError
from specsched.planner import AcceptancePoint, Profile, save_profile
from specsched.planner.predict import predict_arms
from specsched.planner.simulate import SimRequest, Workload, simulate
from specsched.planner.workload import (
    Arrival,
    draw_workload,
    load_workload,
    workload_from_obj,
)
from specsched.planner.workload_acceptance import request_acceptance
from specsched.policy import (
    AdaptiveConfig,
    BatchState,
    KDecision,
    PolicyConfig,
    PolicyKind,
    StepOutcome,
)
from specsched.policy.cost import CTX_UNIT, StepCostModel

# a step costs 10 ms + 1 ms per decoding request + 2 ms per draft token (+ 0.1 ms per prefill
# token in the refill case); no context term, so every step is countable by hand
COST = StepCostModel((0.010, 0.001, 0.0, 0.002, 0.0, 0.0, 0.0))


def _req(out: int, a: float) -> SimRequest:
    return SimRequest(100, out, ((0, (a, a)),))


def test_wave_with_one_straggler() -> None:
    # 3 requests accept every draft, 1 none; K=2 static, 10 tokens each, one wave of 4.
    wl = Workload((_req(10, 1.0),) * 3 + (_req(10, 0.0),), 4, waves=True)
    spec = simulate(wl, PolicyConfig.constant(2).build(), COST)
    # prefill step 14 ms (each prompt's chunk a row); 3 steps of 4 requests (10 + 4 + 2*8 =
    # 30 ms) emit 3 tokens per fast request (1 -> 10); the straggler then runs alone, 1 token
    # per step: 4 steps at K=2 (10 + 1 + 4 = 15 ms), 1 at K=1 (room 1: 13 ms), 1 at K=0 (room
    # 0: 11 ms).
    assert spec.steps == 10 and spec.output_tokens == 40
    assert spec.seconds == pytest.approx(0.014 + 3 * 0.030 + 4 * 0.015 + 0.013 + 0.011)
    nospec = simulate(wl, PolicyConfig.constant(0).build(), COST)
    assert nospec.steps == 10 and nospec.seconds == pytest.approx(0.014 + 9 * 0.014)
    # a steady batch of 4 at mean acceptance 0.75 would predict a gain; the straggler makes a loss
    assert spec.goodput < nospec.goodput


def test_closed_loop_refill_saves_the_tail_steps_of_waves() -> None:
    cost = StepCostModel((0.010, 0.001, 0.0, 0.0, 0.0, 0.0, 0.0001))
    reqs = tuple(SimRequest(100, n, ((0, (1.0,)),)) for n in (3, 7, 3, 3))
    closed = simulate(Workload(reqs, 2), PolicyConfig.constant(0).build(), cost)
    waves = simulate(Workload(reqs, 2, waves=True), PolicyConfig.constant(0).build(), cost)
    # closed loop: r2 and r3 start as soon as a slot frees; a 100-token prefill chunk costs a
    # row (1 ms) and its other 99 tokens (9.9 ms): 2 prompts 31.8 ms, one beside a decoder 21.9
    assert closed.steps == 9 and closed.seconds == pytest.approx(
        0.0318 + 2 * 0.012 + 0.0219 + 2 * 0.012 + 0.0219 + 2 * 0.011)
    # waves: r1 runs alone for 4 steps before the second wave starts
    assert waves.steps == 10 and waves.seconds == pytest.approx(
        0.0318 + 2 * 0.012 + 4 * 0.011 + 0.0318 + 2 * 0.012)
    assert closed.output_tokens == waves.output_tokens == 16


def test_a_prefill_budget_admits_new_requests_a_chunk_at_a_time() -> None:
    """Chunked prefill (`prefill_budget`, the engine's `max_num_batched_tokens`): after one
    token per decoding request the rest of the budget goes to prompts in order, so the decode
    batch grows 1, 1, 2, 3 while three 100-token prompts share a 100-token budget."""
    cost = StepCostModel((0.010, 0.001, 0.0, 0.0, 0.0, 0.0, 0.0001))
    reqs = tuple(SimRequest(100, 8, ((0, (1.0,)),)) for _ in range(3))
    decoding: list[int] = []

    class Count:
        max_k = 0

        def decide(self, batch: BatchState) -> KDecision:
            decoding.append(sum(batch.is_decoding(i) for i in range(len(batch))))
            return KDecision((0,) * len(batch), 0)

        def observe(self, outcome: StepOutcome) -> None:
            pass

    res = simulate(Workload(reqs, 3, prefill_budget=100), Count(), cost)
    # prefill 100 | r0 + 99 of r1 | r0 + r1's last 1 + 98 of r2 | r0, r1 + r2's last 2 | ...
    assert decoding[:5] == [0, 1, 1, 2, 3]
    assert res.output_tokens == 24
    prefill_seconds = res.seconds - sum(0.010 + 0.001 * n for n in decoding)
    # five chunks (r0 100; r1 99 + 1; r2 98 + 2): each a row (1 ms) and its other tokens
    assert prefill_seconds == pytest.approx(5 * 0.001 + (300 - 5) * 0.0001)
    with pytest.raises(ValueError, match="prefill_budget"):
        Workload(reqs, 3, prefill_budget=0)


def test_a_cached_prompt_prefills_at_the_cost_of_a_decode_row_at_its_context() -> None:
    """The engine backend prefills prompts untimed, so a trial recomputes only their last few
    tokens, which read the weights and attend over the whole cached prompt like a decode step:
    a 16-token chunk of a 4,096-token prompt costs a row at context 4,095 and 15 prefill
    tokens, not the step overhead alone (a + 16 g)."""
    cost = StepCostModel((0.010, 0.001, 0.005, 0.0, 0.0, 0.0, 0.0001))  # c: 5 ms per 1k context
    wl = Workload((SimRequest(4096, 1, ((0, (1.0,)),)),), 1, prefill_tokens=16)
    res = simulate(wl, PolicyConfig.constant(0).build(), cost)
    assert res.steps == 1 and res.output_tokens == 1
    assert res.seconds == pytest.approx(0.010 + 0.001 + 0.005 * 4095 / CTX_UNIT + 15 * 0.0001)


def _linear_profile(a: float, requests: tuple[tuple[float, ...], ...] = ()) -> Profile:
    def t_ms(b: int, c: int, k: int) -> float:
        x = (1.0, b, b * c / CTX_UNIT, b * k, 0.0, float(k), 0.0, 0.0)
        return 1000.0 * float(np.dot(COST.coef, x))

    p = table_profile((1, 4), (100, 1000), (0, 1, 2), t_ms)
    acc = tuple(AcceptancePoint(c, (a, a), 0 if not requests else 100, len(requests),
                                requests=requests) for c in (100, 1000))
    return Profile(p.metadata, p.grid, p.timings, acc)


WAVE = {"num_requests": 4, "concurrency": 4, "arrival": "waves", "prompt_len": 100,
        "output_len": 10, "acceptance_spread": 0, "prefill_tokens": 0}


def test_predict_arms_on_a_known_cost_model() -> None:
    pred = predict_arms(_linear_profile(1.0), workload_from_obj(WAVE),
                        {"K=2": PolicyConfig.constant(2)}, seeds=(0, 1, 2))["K=2"]
    # K=2: 3 decode steps of 30 ms for 36 tokens; no-spec: 9 steps of 14 ms
    assert pred.decode_goodput.mean == pytest.approx(36 / 0.090, rel=1e-3)
    assert pred.decode_speedup.mean == pytest.approx((36 / 0.090) / (36 / 0.126), rel=1e-3)
    assert pred.decode_speedup.lo == pytest.approx(pred.decode_speedup.hi, rel=1e-6)
    assert pred.k_histogram == {2: 9} and pred.extrapolation == ""
    assert pred.cost_rel_rmse < 1e-3


def test_per_request_draws_and_arms_including_adaptive() -> None:
    profile = _linear_profile(0.75, ((1.0, 1.0),) * 3 + ((0.0, 0.0),))
    rng = random.Random(0)
    draws = {request_acceptance(profile, 100, None, rng) for _ in range(200)}
    assert draws == {(1.0, 1.0), (0.0, 0.0)}  # measured requests, not their mean
    spec = workload_from_obj({**WAVE, "acceptance_spread": None, "prompt_len": 2000})
    assert draw_workload(spec, profile, 3) == draw_workload(spec, profile, 3)
    adaptive = PolicyConfig(kind=PolicyKind.ADAPTIVE, adaptive=AdaptiveConfig(max_k=2))
    preds = predict_arms(profile, spec, {"k2": PolicyConfig.constant(2), "adaptive": adaptive},
                         seeds=range(6))
    assert set(preds) == {"k2", "adaptive"}
    k2 = preds["k2"].decode_speedup
    assert k2.lo < k2.mean < k2.hi  # draws differ: how many stragglers a wave gets
    assert "contexts 2000..2010 (profiled 100..1000)" in preds["k2"].extrapolation
    assert sum(preds["adaptive"].k_histogram.values()) > 0


@pytest.mark.parametrize(("change", "message"), [
    ({"num_requests": 0}, r"num_requests: must be in \[1, 100000\], got 0"),
    ({"concurency": 4}, r"unknown key\(s\) concurency"),
    ({"arrival": "burst"}, "is not closed-loop or waves"),
    ({"prompt_len": {"uniform": [10]}}, r"prompt_len.uniform: expected \[lo, hi\]"),
    ({"prompt_len": {"uniform": [50, 10]}}, "lo <= hi"),
    ({"prompt_len": {"gauss": 3}}, r"unknown key\(s\) gauss"),
    ({"prompt_len": {"lognormal": {"mean": 100}}}, "needs mean and std"),
    ({"prompt_len": "4k"}, "prompt_len: expected an integer"),
    ({"output_len": 1.5}, "output_len: expected an integer"),
    ({"output_len": True}, "output_len: expected an integer"),
    ({"acceptance_spread": 2}, r"acceptance_spread: must be in \[0, 1\]"),
    ({"prefill_tokens": -1}, r"prefill_tokens: must be in \[0,"),
])
def test_workload_errors_are_one_line(change: dict[str, object], message: str) -> None:
    with pytest.raises(UserError, match=message) as err:
        workload_from_obj({**WAVE, **change})
    assert "\n" not in str(err.value)


def test_workload_files(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text("num_requests: 8\nconcurrency: 4\nprompt_len: {lognormal: {mean: 500, std: 100}}"
                 "\noutput_len: {values: [32, 64]}\n")
    spec = load_workload(str(f))
    assert spec.arrival is Arrival.CLOSED_LOOP and spec.num_requests == 8
    lens = {spec.output_len.draw(random.Random(i)) for i in range(50)}
    assert lens == {32, 64} and 100 < spec.prompt_len.bounds[0] < 500 < spec.prompt_len.bounds[1]
    assert load_workload(json.dumps(WAVE)).arrival is Arrival.WAVES
    for text, message in [("num_requests: [", "invalid YAML"), ("- 1\n- 2\n", "expected a mapping"),
                          ("concurrency: 4\n", "num_requests is required")]:
        f.write_text(text)
        with pytest.raises(UserError, match=message) as err:
            load_workload(str(f))
        assert "\n" not in str(err.value)
    with pytest.raises(UserError, match="no such file"):
        load_workload(str(tmp_path / "missing.yaml"))


def test_plan_workload_cli(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "p.json"
    save_profile(_linear_profile(0.9), path)
    wl = tmp_path / "w.yaml"
    wl.write_text("num_requests: 4\nconcurrency: 4\narrival: waves\nprompt_len: 500\n"
                  "output_len: 12\n")
    assert main(["plan", str(path), "--workload", str(wl), "--seeds", "3"]) == 0
    out = capsys.readouterr().out
    for arm in ("no-spec", "static K=", "batch-only", "plan", "adaptive"):
        assert arm in out
    assert main(["plan", str(path), "--workload", str(wl), "--seeds", "2", "--json"]) == 0
    arms = json.loads(capsys.readouterr().out)["specsched_plan"]["workload_prediction"]["arms"]
    assert arms["no-spec"]["decode_speedup"] == [1.0, 1.0, 1.0]
    wl.write_text("num_requests: 4\nconcurrency: 0\nprompt_len: 500\noutput_len: 12\n")
    assert main(["plan", str(path), "--workload", str(wl)]) == 2
    err = capsys.readouterr().err.strip()
    assert "w.yaml: workload.concurrency: must be in [1, 100000], got 0" in err and "\n" not in err
