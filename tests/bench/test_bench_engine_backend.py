"""The engine backend end to end on a tiny random model: experiment -> bench -> report, the
arm -> SpeculativeConfig mapping, and the greedy-output canary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specsched.bench.canary import canary_warnings, output_mismatches
from specsched.bench.experiment import Arm
from specsched.bench.results import Results, read_results
from specsched.bench.step_rows import position_counts, request_places
from specsched.cli import main
from specsched.errors import UserError
from specsched.policy import PolicyConfig

EXPERIMENT = """
name: tiny-engine
backend: engine
backend_options: {{model: {model}, window: 8, threads: 1}}
drafter: streaming
replicates: 2
warmup: 1
baseline: no-spec
arms:
  - {{name: no-spec, k: 0}}
  - {{name: k2, k: 2}}
  - {{name: two-d, schedule: [[1, 4, 1, 40, 0], [1, 4, 41, 100000, 3]]}}
  - {{name: ngram, k: 2, drafter: ngram}}
scenarios:
  - {{name: short, kind: prefix_repetition, prefix_len: 16, suffix_len: 8, num_requests: 3,
     concurrency: 3, output_len: 10}}
  - {{name: long, kind: random, input_len: 64, range_ratio: 0.2, num_requests: 4,
     concurrency: 2, output_len: 10}}
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    import transformers

    path = tmp_path_factory.mktemp("bench_engine_tiny") / "model"
    cfg = transformers.LlamaConfig(
        vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        tie_word_embeddings=False, eos_token_id=1, bos_token_id=0,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).float().eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(40.0)  # sharp logits: no near-tied greedy choices
    model.save_pretrained(path, safe_serialization=True)
    return path


def test_engine_backend_experiment_to_report(tiny: Path, tmp_path: Path, capsys: Any) -> None:
    exp = tmp_path / "exp.yaml"
    exp.write_text(EXPERIMENT.format(model=tiny))
    results = tmp_path / "r.jsonl"
    assert main(["bench", str(exp), "--out", str(results)]) == 0
    res = read_results(results)
    measured = [t for t in res.trials if not t["warmup"]]
    assert len(measured) == 2 * 4 * 2 and len(res.trials) == 2 * len(measured)
    for t in measured:
        m, extra = t["metrics"], t["extra"]
        n = 3 if t["scenario"] == "short" else 4
        assert m["num_requests"] == n and m["num_output_tokens"] == 10 * n
        assert m["wall_s"] > 0 and m["ttft_s_median"] > 0 and m["itl_s_median"] > 0
        assert extra["greedy"] and len(extra["output_hash"]) == 16
        hist = {int(k): v for k, v in t["k_histogram"].items()}
        if t["arm"] == "no-spec":
            assert set(hist) == {0} and extra["drafter"] == "none"
        if t["arm"] == "k2":
            assert set(hist) == {2} and extra["acceptance"]["drafted_per_position"][0] > 0
            assert extra["drafter"] == "streaming" and extra["window"] == 8
        if t["arm"] == "ngram":
            assert extra["drafter"] == "ngram"
        if t["arm"] == "two-d":  # the 2-D schedule: K=0 below ctx 41, K=3 above
            assert set(hist) == ({0} if t["scenario"] == "short" else {3})
        if t["scenario"] == "short":  # 16 shared + 8 own tokens, exact
            assert m["num_prompt_tokens"] == 3 * 24
        # the step log: one row per step, K and accepted per decoding request, as counted
        steps = extra["steps"]
        assert len(steps) == extra["num_steps"]
        drafted = [0] * 8
        for ms, prefill, ks, acc, places in steps:
            assert ms > 0 and prefill >= 0 and len(ks) == len(acc) == len(places) <= n
            assert all(0 <= a <= k for k, a in zip(ks, acc, strict=True))
            assert sorted(places) == sorted(set(places)) and set(places) <= set(range(n))
            for k in ks:
                for pos in range(k):
                    drafted[pos] += 1
        assert sum(len(ks) + sum(acc) for _, _, ks, acc, _ in steps) + n == 10 * n  # every token
        per_position = extra["acceptance"]["drafted_per_position"]
        assert drafted[:len(per_position)] == per_position and sum(drafted) == sum(per_position)
        # read back per request: each request's decode rows emit its output after its prefill
        # token; the accepted drafts per position add up to the run's; the admission replay
        # of a log without the places column finds the same requests
        outs = [r["num_output_tokens"] for r in t["requests"]]
        places = request_places(steps, outs)
        assert places == [row[4] for row in steps]
        assert request_places([row[:4] for row in steps], outs) == places
        emitted = [1] * n
        for row, where in zip(steps, places, strict=True):
            for p, a in zip(where, row[3], strict=True):
                emitted[p] += a + 1
        assert emitted == outs
        counts = position_counts(steps, outs, 8)
        assert counts is not None
        accepted = [sum(c[1][i] for c in counts) for i in range(8)]
        got = extra["acceptance"]["accepted_per_position"]
        assert accepted[:len(got)] == got and sum(accepted) == sum(got)
        if t["arm"] == "k2":  # K = 2, less only where a request's room caps it at its end
            assert max(k for _, _, ks, *_ in steps for k in ks) == 2
    # greedy: every arm emits the baseline's tokens (the canary stays silent)
    assert output_mismatches(res, "no-spec") == {}
    assert main(["report", str(results), "--out", str(tmp_path / "rep")]) == 0
    out = capsys.readouterr().out
    assert "no-spec" in out and "two-d" in out
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "short" in md and "long" in md and "correctness canary" not in md


def _results(hashes: dict[tuple[str, int, str], str]) -> Results:
    trials = [
        {"type": "trial", "scenario": s, "replicate": r, "arm": a, "warmup": False,
         "extra": {"greedy": True, "output_hash": h}}
        for (s, r, a), h in hashes.items()
    ]
    return Results({"type": "header"}, trials)


def test_canary_flags_arms_whose_greedy_tokens_differ() -> None:
    res = _results({("s", 0, "base"): "aa", ("s", 0, "x"): "aa", ("s", 0, "y"): "bb",
                    ("s", 1, "base"): "cc", ("s", 1, "y"): "cc", ("t", 0, "x"): "zz"})
    assert output_mismatches(res, "base") == {("s", "y"): [0]}
    (warning,) = canary_warnings(res, "base")
    assert "'y'" in warning and "correctness canary" in warning


def test_arm_to_speculative_config() -> None:
    from specsched.bench.backends.engine import EngineOptions, speculative_config
    from specsched.engine import DrafterKind

    opts = EngineOptions.from_options({"window": 64})
    assert opts.speculative.window == 64 and opts.speculative.drafter is DrafterKind.STREAMING
    assert speculative_config(Arm("n", PolicyConfig.constant(0)), opts) is None
    three = PolicyConfig(schedule=PolicyConfig.constant(3).schedule, per_request_k=True)
    cfg = speculative_config(Arm("k", three, drafter="default", options=(("window", 32),)), opts)
    assert cfg is not None
    assert cfg.drafter is DrafterKind.STREAMING and cfg.window == 32 and cfg.policy.per_request_k
    assert cfg.policy.schedule.k_for(8, 5000) == 3
    with pytest.raises(UserError, match=r"engine backend options: unknown key\(s\) temperature"):
        speculative_config(Arm("k", PolicyConfig.constant(3), drafter="ngram",
                               options=(("temperature", 1),)), opts)
    with pytest.raises(UserError, match="unknown key"):
        EngineOptions.from_options({"modle": "x"})
    with pytest.raises(UserError, match="engine backend_options: window must be >= 1"):
        EngineOptions.from_options({"window": 0})
    no_draft = EngineOptions.from_options({"drafter": "none"})
    assert speculative_config(Arm("k", three, drafter="default"), no_draft) is None
    ngram = speculative_config(Arm("k", three, drafter="ngram"), no_draft)
    assert ngram is not None and ngram.drafter is DrafterKind.NGRAM and ngram.policy is three


def test_engine_results_are_json_lines(tiny: Path, tmp_path: Path) -> None:
    """A sampled scenario (temperature > 0) runs too, with seeded per-request sampling."""
    exp = tmp_path / "exp.yaml"
    text = EXPERIMENT.format(model=tiny).replace("replicates: 2", "replicates: 1").replace(
        "warmup: 1", "warmup: 0")
    text += ("  - {name: sampled, kind: batch, prompt_lens: [20, 30], output_len: 6,\n"
             "     sampling: {temperature: 0.8, top_k: 20}}\n")
    exp.write_text(text)
    results = tmp_path / "r.jsonl"
    assert main(["bench", str(exp), "--out", str(results)]) == 0
    lines = [json.loads(x) for x in results.read_text().splitlines()]
    sampled = [x for x in lines if x.get("scenario") == "sampled"]
    assert sampled and all(not x["extra"]["greedy"] for x in sampled)
    assert all(x["metrics"]["num_output_tokens"] == 12 for x in sampled)
    # prompts the slot-resident prefix cache could not keep after the untimed prefill: none
    # when a trial's requests fit the engine's slots (short: 3 in 3), some when they do not
    # (long: 4 requests on the same 3-slot engine), and the results say so
    trials = [x for x in lines if x.get("type") == "trial"]
    by_scenario = {x["scenario"]: x["extra"]["uncached_prompts"] for x in trials
                   if x["extra"]["prefilled_untimed"]}
    assert by_scenario["short"] == 0 and by_scenario["long"] >= 1, by_scenario


WARM = EXPERIMENT.split("arms:")[0].replace("tiny-engine", "tiny-warm").replace(
    "replicates: 2", "replicates: 3").replace("warmup: 1", "warmup: 0") + """arms:
  - {{name: no-spec, k: 0}}
  - {{name: cold, k: 2, per_request_k: true, policy: adaptive, adaptive: {{max_k: 3}}}}
  - {{name: warm, k: 2, per_request_k: true, policy: adaptive, adaptive: {{max_k: 3}},
     warm: true}}
scenarios:
  - {{name: short, kind: prefix_repetition, prefix_len: 16, suffix_len: 8, num_requests: 3,
     concurrency: 3, output_len: 10}}
  - {{name: pair, kind: batch, prompt_lens: [20, 40], output_len: 8}}
"""


def test_a_warm_arm_carries_its_policy_across_trials(tiny: Path, tmp_path: Path) -> None:
    """`warm: true`: primed once per scenario by an unmeasured run, then the same policy object
    runs every trial of that scenario (its step count only grows); a cold adaptive arm starts
    fresh every trial; both stay lossless (greedy tokens equal no-spec's)."""
    from specsched.bench.backends.base import TrialSpec
    from specsched.bench.backends.engine import EngineBackend
    from specsched.bench.load import load_experiment
    from specsched.bench.workload import request_shapes
    from specsched.policy import AdaptivePolicy

    path = tmp_path / "warm.yaml"
    path.write_text(WARM.format(model=tiny))
    exp = load_experiment(path)
    assert exp.arm("warm").warm and not exp.arm("cold").warm
    backend = EngineBackend.from_options(dict(exp.backend_options))
    scenario = exp.scenario("short")
    shapes = request_shapes(scenario, 0)
    steps: list[int] = []
    hashes: dict[str, list[str]] = {}
    for rep in range(3):
        for arm in ("no-spec", "cold", "warm"):
            res = backend.run_trial(TrialSpec(exp.arm(arm), scenario, shapes, rep, 0, False,
                                              1000 + rep))
            hashes.setdefault(arm, []).append(res.extra["output_hash"])
            assert res.extra["warm"] == (arm == "warm")
            assert res.extra["primed"] == (arm == "warm" and rep == 0)
            if arm == "warm":
                policy = backend._warm[("warm", "short")]
                assert isinstance(policy, AdaptivePolicy)
                steps.append(policy.num_steps)
                assert policy.num_steps > (steps[-2] if rep else res.extra["num_spec_steps"])
    assert ("cold", "short") not in backend._warm
    assert hashes["warm"] == hashes["no-spec"] == hashes["cold"]
    # another scenario gets its own primed policy
    other = exp.scenario("pair")
    res = backend.run_trial(TrialSpec(exp.arm("warm"), other, request_shapes(other, 0), 0, 0,
                                      False, 7))
    assert res.extra["primed"] and backend._warm[("warm", "pair")] is not policy


def test_warm_needs_an_adaptive_arm_on_the_engine_backend(tmp_path: Path) -> None:
    base = WARM.format(model="smollm2-135m")
    bad = {
        "`warm` needs `policy: adaptive`": base.replace(
            "{name: no-spec, k: 0}", "{name: no-spec, k: 0, warm: true}"),
        "`warm` must be true or false": base.replace("warm: true", "warm: 1"),
        r"`warm` arms \(warm\) need backend engine": base.replace(
            "backend: engine", "backend: simulated"),
    }
    from specsched.bench.load import load_experiment

    for i, (msg, text) in enumerate(bad.items()):
        path = tmp_path / f"bad{i}.yaml"
        path.write_text(text)
        with pytest.raises(UserError, match=msg):
            load_experiment(path)
