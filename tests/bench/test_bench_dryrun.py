from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from specsched.bench.dryrun import classify_scenario, dry_run, wave_k_runs
from specsched.bench.experiment import Arm
from specsched.bench.load import experiment_from_obj
from specsched.policy import PolicyConfig
from specsched.policy.route import CtxAgg, route, route_per_request
from specsched.schedule import parse_schedule

TWO_D = [[1, 8, 1, 1023, 3], [1, 8, 1024, 100000, 1], [9, 64, 1, 1023, 1],
         [9, 64, 1024, 100000, 0]]


def exp_with(arms: list[dict[str, Any]], scenario: dict[str, Any]) -> Any:
    return experiment_from_obj({"arms": arms, "scenarios": [scenario], "replicates": len(arms)})


def batch(lens: list[int], out: int = 32) -> dict[str, Any]:
    return {"name": "s", "kind": "batch", "prompt_lens": lens, "output_len": out}


def test_same_k_on_short_batch_is_a_control_group() -> None:
    # batch-only K=3 at B<=8, 2-D K=3 at short context, constant k=3: one configuration at B=4.
    exp = exp_with([{"name": "bo", "schedule": [[1, 8, 3], [9, 64, 1]]},
                    {"name": "2d", "schedule": TWO_D}, {"name": "k3", "k": 3},
                    {"name": "off", "k": 0}], batch([100, 200, 300, 400]))
    r = classify_scenario(exp, exp.scenarios[0])
    assert r.controls == (("bo", "2d", "k3"),)
    assert r.crossings == ()
    assert r.k_values == {"bo": (3,), "2d": (3,), "k3": (3,), "off": (0,)}
    assert not r.all_controls


def test_long_context_separates_the_arms() -> None:
    exp = exp_with([{"name": "bo", "schedule": [[1, 8, 3]]}, {"name": "2d", "schedule": TWO_D}],
                   batch([2000, 3000]))
    r = classify_scenario(exp, exp.scenarios[0])
    assert r.controls == ()
    assert r.k_values == {"bo": (3,), "2d": (1,)}


def test_crossing_reports_token_and_context() -> None:
    # mean of [1000, 1010, 1020] = 1010: context 1024 is reached at token 14.
    exp = exp_with([{"name": "2d", "schedule": TWO_D}, {"name": "k3", "k": 3}],
                   batch([1000, 1010, 1020], out=64))
    r = classify_scenario(exp, exp.scenarios[0])
    assert [c.to_json() for c in r.crossings] == [
        {"arm": "2d", "token": 14, "ctx": 1024, "from_k": 3, "to_k": 1, "wave": 0, "request": None}
    ]
    assert r.k_values["2d"] == (1, 3)
    assert r.controls == ()  # equal for 14 tokens is not equal


def test_crossing_after_the_output_is_not_reported() -> None:
    exp = exp_with([{"name": "2d", "schedule": TWO_D}], batch([1000, 1010, 1020], out=14))
    r = classify_scenario(exp, exp.scenarios[0])
    assert r.crossings == () and r.k_values["2d"] == (3,)


def test_ctx_agg_max_crosses_earlier() -> None:
    exp = exp_with([{"name": "mx", "schedule": TWO_D, "ctx_agg": "max"}],
                   batch([1000, 1010, 1020], out=64))
    (c,) = classify_scenario(exp, exp.scenarios[0]).crossings
    assert (c.token, c.ctx) == (4, 1024)


def test_per_request_k_crossings_name_the_request() -> None:
    exp = exp_with([{"name": "pr", "schedule": TWO_D, "per_request_k": True},
                    {"name": "agg", "schedule": TWO_D}], batch([100, 1020], out=8))
    r = classify_scenario(exp, exp.scenarios[0])
    pr = [c for c in r.crossings if c.arm == "pr"]
    assert [(c.token, c.ctx, c.from_k, c.to_k, c.request) for c in pr] == [(4, 1024, 3, 1, 1)]
    assert r.k_values["pr"] == (1, 3)


def test_uniform_per_request_k_equals_aggregate_arm() -> None:
    exp = exp_with([{"name": "pr", "schedule": TWO_D, "per_request_k": True},
                    {"name": "agg", "schedule": TWO_D}], batch([100, 120], out=8))
    assert classify_scenario(exp, exp.scenarios[0]).controls == (("pr", "agg"),)


def test_different_drafter_or_options_is_not_a_control() -> None:
    exp = exp_with([{"name": "a", "k": 2, "drafter": "ngram"},
                    {"name": "b", "k": 2, "drafter": "eagle"},
                    {"name": "c", "k": 2, "drafter": "ngram", "options": {"cuda_graphs": False}},
                    {"name": "d", "k": 2, "drafter": "ngram"}], batch([10]))
    assert classify_scenario(exp, exp.scenarios[0]).controls == (("a", "d"),)


def test_drafter_arm_with_k_zero_everywhere_is_no_spec_on_the_engine_only() -> None:
    # 2-D K=0 at long context for B>8: on a B=16 long-context batch it never drafts.
    arms = [{"name": "off", "k": 0, "drafter": "none"},
            {"name": "2d", "schedule": TWO_D, "drafter": "streaming"},
            {"name": "ng", "schedule": TWO_D, "drafter": "ngram", "options": {"window": 64}}]
    exp = exp_with(arms, batch([2000] * 16))
    assert classify_scenario(exp, exp.scenarios[0]).controls == (("off", "2d", "ng"),)
    short = exp_with(arms, batch([100] * 16))  # K=1 there: a real speculative configuration
    assert classify_scenario(short, short.scenarios[0]).controls == ()
    served = experiment_from_obj({
        "arms": arms, "scenarios": [batch([2000] * 16)], "replicates": 3, "backend": "openai",
        "backend_options": {"base_url": "http://127.0.0.1:9"},
    })
    assert classify_scenario(served, served.scenarios[0]).controls == ()


def test_all_controls_warns_loudly_and_baseline_control_warns() -> None:
    exp = exp_with([{"name": "a", "k": 2}, {"name": "b", "schedule": [[1, 4, 2], [5, 8, 1]]}],
                   batch([10, 20]))
    dry = dry_run(exp)
    assert dry.scenarios[0].all_controls
    assert any("ALL 2 arms" in w for w in dry.warnings)
    js = dry.to_json()
    assert js["scenarios"][0]["controls"] == [["a", "b"]]
    assert set(js["scenarios"][0]) >= {"name", "controls", "crossings", "k_values"}


def test_batch_size_is_min_of_concurrency_and_requests_and_waves() -> None:
    # 6 requests, concurrency 4 -> waves of 4 and 2; schedule K=3 at B<=2, K=1 above.
    exp = exp_with([{"name": "s", "schedule": [[1, 2, 3], [3, 64, 1]]}],
                   {"name": "s", "kind": "prefix_repetition", "prefix_len": 50, "suffix_len": 5,
                    "num_requests": 6, "concurrency": 4, "output_len": 4})
    r = classify_scenario(exp, exp.scenarios[0])
    assert (r.batch_size, r.num_waves) == (4, 2)
    assert r.k_values["s"] == (1, 3)


def test_random_lengths_are_seeded() -> None:
    sc = {"name": "s", "kind": "random", "input_len": 1000, "range_ratio": 0.5,
          "num_requests": 8, "concurrency": 8, "output_len": 4}
    e1 = experiment_from_obj({"arms": [{"name": "a", "schedule": TWO_D}], "scenarios": [sc],
                              "seed": 1})
    assert dry_run(e1).to_json() == dry_run(e1).to_json()


@settings(max_examples=60, deadline=None)
@given(
    lens=st.lists(st.integers(1, 3000), min_size=1, max_size=9),
    out=st.integers(1, 300),
    agg=st.sampled_from(list(CtxAgg)),
    per_request=st.booleans(),
    bounds=st.lists(st.integers(2, 3500), min_size=0, max_size=4, unique=True),
    ks=st.lists(st.integers(0, 5), min_size=5, max_size=5),
)
def test_run_length_walk_equals_routing_every_token(lens: list[int], out: int, agg: CtxAgg,
                                                    per_request: bool, bounds: list[int],
                                                    ks: list[int]) -> None:
    cuts = [1, *sorted(bounds)]
    entries = [[1, 64, lo, hi, ks[i]] for i, (lo, hi) in
               enumerate(zip(cuts, [c - 1 for c in cuts[1:]] + [10**7]))]
    sched = parse_schedule(entries)
    arm = Arm("x", PolicyConfig(schedule=sched, ctx_agg=agg, per_request_k=per_request))
    runs = wave_k_runs(arm, lens, out)
    expanded: list[tuple[int, ...]] = []
    for (t0, k), t1 in zip(runs, [t for t, _ in runs[1:]] + [out]):
        expanded += [k] * (t1 - t0)
    for t in range(out):
        ctx = [p + t for p in lens]
        want = (tuple(route_per_request(sched, ctx)) if per_request
                else (route(sched, ctx, lens, agg).k,) * len(lens))
        assert expanded[t] == want


def test_adaptive_arm_outside_its_profile_box_is_named() -> None:
    # the B {1, 4} profile's box (slack 1.25: up to B = 5) does not cover 16 concurrent
    # requests; the B {1, 4, 16} one does, until the contexts leave 512..4096 far behind
    examples = Path(__file__).resolve().parents[2] / "examples" / "experiments"

    def arm(name: str, profile: str) -> dict[str, Any]:
        return {"name": name, "k": 1, "per_request_k": True, "policy": "adaptive",
                "adaptive": {"profile": str(examples / profile), "max_k": 5}}

    arms = [{"name": "off", "k": 0}, arm("small", "profile_avx2_b1_b4_k5.json"),
            arm("wide", "profile_avx2_b1_b4_b16_k5.json")]
    warned = [w for w in dry_run(exp_with(arms, batch([480] * 16))).warnings if "profile" in w]
    assert len(warned) == 1 and "'small'" in warned[0] and "16 concurrent" in warned[0]
    assert "batch (1, 4)" in warned[0]
    assert [w for w in dry_run(exp_with(arms, batch([480] * 4))).warnings if "profile" in w] == []
    long = [w for w in dry_run(exp_with(arms, batch([9000] * 4))).warnings if "profile" in w]
    assert len(long) == 2 and all("ctx 9000-9032" in w for w in long)
