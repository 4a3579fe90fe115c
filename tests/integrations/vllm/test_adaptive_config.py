"""The adaptive policy in the vLLM integration without vLLM: the `adaptive` block, engine-start
checks, the coverage table for 0..max_k, export round trip, decision/outcome pairing."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from specsched.cli import main
from specsched.errors import UserError
from specsched.integrations.vllm import config_from_additional, config_from_obj, coverage_table
from specsched.integrations.vllm.adaptive import AdaptiveRun
from specsched.integrations.vllm.adaptive_settings import engine_adaptive, parse_adaptive
from specsched.integrations.vllm.table import dense_from_entries, missing_from_lookup
from specsched.policy import AdaptiveConfig, PolicyConfig, PolicyKind
from specsched.policy.adaptive import Pending
from specsched.schedule import INF, batch_only_projection, parse_schedule

REPO = Path(__file__).resolve().parents[3]
PROFILE = REPO / "examples" / "profiles" / "smollm2_cpu_manual.profile.json"
ENTRIES = [[1, 4, 1, 511, 1], [1, 4, 512, INF, 3], [5, 16, 1, 511, 0], [5, 16, 512, INF, 2]]


def adaptive(block: Any = None, **top: Any) -> dict[str, Any]:
    return {"schedule": ENTRIES, "policy": "adaptive", "adaptive": block, **top}


@pytest.fixture()
def bad_profile(tmp_path: Path) -> str:
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    return str(path)


@pytest.mark.parametrize(
    ("obj", "match"),
    [
        (adaptive({"max_kk": 4}), r"adaptive: unknown key\(s\) max_kk; allowed: acceptance_prior"),
        ({"schedule": ENTRIES, "policy": "learned"}, "policy must be one of static, adaptive"),
        ({"schedule": ENTRIES, "adaptive": {"max_k": 4}}, 'need "policy": "adaptive"'),
        (adaptive(per_request_k=True), "per_request_k=True is not available in vLLM"),
        (adaptive({"per_request_k": True}), "adaptive per_request_k=True is not available"),
        (adaptive({"profile": "/nonexistent/p.json"}),
         "adaptive profile /nonexistent/p.json cannot be read: .*no such profile file"),
        (adaptive({"profile": "BAD"}), "adaptive profile .*bad.json cannot be read: .*JSON"),
        (adaptive({"profile": 3}), "profile must be a file path"),
        (adaptive({"max_k": 0}), r"max_k must be in \[1, 16\]"),
        (adaptive({"max_k": 17}), r"max_k must be in \[1, 16\]"),
        (adaptive({"max_k": "4"}), "max_k must be an integer, got '4'"),
        (adaptive({"start_k": 0}), r"start_k must be in \[1, max_k=4\]"),
        (adaptive({"margin": True}), "margin must be a finite number"),
        (adaptive({"split_z": -1}), r"split_z must be in \[0, 10\]"),
        (adaptive({"request_decay": 1.5}), r"request_decay must be in \(0, 1\]"),
        (adaptive({"cost_prior": [1, 2]}), r"cost_prior needs 8 coefficients \(7 from before"),
        (adaptive({"cost_prior": {"coef": [0.01] * 8, "q_tile": 0}}),
         "cost_prior q_tile must be >= 1"),
        (adaptive({"cost_prior": {"coef": [0.01] * 7, "batch_range": [4, 1]}}),
         r"cost_prior batch_range must have 0 <= lo <= hi"),
        (adaptive({"cost_prior": {"coef": [0.01] * 7, "ctx_range": 512}}),
         r"cost_prior ctx_range must be \[lo, hi\]"),
        (adaptive({"cost_prior": {"coef": [0.01] * 7, "verified_depths": [[4, 512]]}}),
         r"cost_prior verified_depths must be \[\[B >= 1, ctx >= 1, depth >= 0\], ...\]"),
        (adaptive({"cost_prior": {"coef": [0.01] * 7, "verified_depths": 3}}),
         "cost_prior verified_depths must be"),
        (adaptive({"cost_prior": {"coef": [0.01] * 7, "verified_depths": [[4, 512, "x"]]}}),
         "cost_prior verified_depths must be an integer"),
        (adaptive({"cost_prior": {"coef": [0.01] * 7, "shape": {"batch_sizes": [1]}}}),
         r"cost_prior shape must be \{batch_sizes, contexts, ks, log_ratio\}"),
        (adaptive({"cost_prior": {"coef": [0.01] * 7, "shape": {
            "batch_sizes": [1], "contexts": [512], "ks": [0, 1], "log_ratio": [[[0.0]]]}}}),
         "cost_prior shape must be .*log_ratio must be"),
        (adaptive({"acceptance_prior": [[512]]}), "acceptance_prior must be"),
        (adaptive("fast"), "adaptive must be an object"),
    ],
)
def test_config_validation(obj: dict[str, Any], match: str, bad_profile: str) -> None:
    block = obj.get("adaptive")
    if isinstance(block, dict) and block.get("profile") == "BAD":
        obj = {**obj, "adaptive": {"profile": bad_profile}}
    with pytest.raises(UserError, match=match) as info:
        config_from_obj(obj)
    assert "\n" not in str(info.value) and str(info.value).startswith("specsched: ")


def test_valid_blocks() -> None:
    cfg = config_from_obj(adaptive(per_request_k=False))
    assert cfg.is_adaptive and cfg.adaptive == AdaptiveConfig() and not cfg.adaptive_max_k_given
    cfg = config_from_obj(adaptive({"profile": str(PROFILE), "max_k": 3, "margin": 0.1,
                                    "warmup_steps": 8, "per_request_k": False}))
    a = cfg.adaptive_config
    assert (a.max_k, a.margin, a.warmup_steps) == (3, 0.1, 8) and cfg.adaptive_max_k_given
    assert a.cost_prior is not None and a.acceptance_prior  # from the profile
    # The block travels back through --additional-config unchanged.
    again = config_from_additional(json.loads(json.dumps(cfg.to_additional_config())))
    assert again == cfg
    # Explicit priors win over the profile's.
    own = config_from_obj(adaptive({"profile": str(PROFILE), "acceptance_prior": [[100, [0.5]]],
                                    "cost_prior": {"coef": [0.01, 0, 0, 0.001, 0, 0, 0]}}))
    assert own.adaptive_config.acceptance_prior == ((100, (0.5,)),)
    assert own.adaptive_config.cost_prior.coef[0] == 0.01  # type: ignore[union-attr]
    # seven coefficients (written before the tile term) read with the tile term at zero
    assert own.adaptive_config.cost_prior.coef[7] == 0.0  # type: ignore[union-attr]
    # The profiled box travels with the cost prior (outside it the policy trusts it less).
    prior = a.cost_prior
    assert prior.batch_range is not None and prior.ctx_range is not None
    assert prior.verified_depths  # and where the profile verified its fit (the trust seed)
    assert prior.shape is not None  # and what its plane missed at each profiled point
    boxed = config_from_obj(adaptive({"cost_prior": prior.to_json()}))
    assert boxed.adaptive_config.cost_prior == prior
    tiled = dataclasses.replace(prior, q_tile=5)  # the attention tile term travels too
    assert config_from_obj(adaptive({"cost_prior": tiled.to_json()})
                           ).adaptive_config.cost_prior == tiled
    # The policy the scheduler class builds from it: adaptive, one K per step.
    built = PolicyConfig(schedule=cfg.schedule, kind=PolicyKind.ADAPTIVE, adaptive=a).build()
    assert built.max_k == 3 and not built.per_request  # type: ignore[attr-defined]


def test_acceptance_only_profile(tmp_path: Path) -> None:
    """`specsched profile --from-vllm-trace` writes no timings: the acceptance prior only."""
    obj = json.loads(PROFILE.read_text())
    path = tmp_path / "acc.json"
    path.write_text(json.dumps({**obj, "timings": []}))
    a, _ = parse_adaptive({"profile": str(path)})
    assert a.cost_prior is None and len(a.acceptance_prior) == len(obj["acceptance"])


@pytest.mark.parametrize(
    ("max_k", "given", "num_spec", "lookup", "want", "match"),
    [
        (4, True, 4, [0, 4, 3, 2, 1, 0], 4, None),
        (4, False, 3, [0, 3, 2, 1, 0], 3, None),  # default: num_speculative_tokens
        (5, True, 4, [0, 4, 3, 2, 1, 0], None, "max_k=5 is above .*num_speculative_tokens=4"),
        (3, True, 4, [0, 1, 1, 3, 0], None, r"0..3 but .*batch size <= 4 to K=\[2\].*--max-k 3"),
    ],
)
def test_engine_start_checks(max_k: int, given: bool, num_spec: int, lookup: list[int],
                             want: int | None, match: str | None) -> None:
    cfg = AdaptiveConfig(max_k=max_k)
    if match is None:
        assert engine_adaptive(cfg, given, num_spec, lookup).max_k == want
        return
    with pytest.raises(UserError, match=match) as info:
        engine_adaptive(cfg, given, num_spec, lookup)
    assert "\n" not in str(info.value)


def test_coverage_table_for_any_k() -> None:
    s = parse_schedule(ENTRIES)
    stock = dense_from_entries(batch_only_projection(s, 1), 64, 4)
    table = coverage_table(s, 64, any_batch_ks=range(5))
    dense = dense_from_entries(table, 64, 4)
    assert set(dense[1:]) == {0, 1, 2, 3, 4} and missing_from_lookup(s, dense) == []
    # Any K may come at any batch size: each is pinned at the widest free one, and the stock
    # fallback changes at those <= max_k + 1 batch sizes only.
    assert [bs for bs in range(1, 65) if dense[bs] != stock[bs]] == [60, 61, 62, 63]


def export(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[dict[str, str], str]:
    code = main(["export", *argv, "--to", "vllm", "--max-num-seqs", "32"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    parts = shlex.split(captured.out)
    return dict(zip(parts[::2], parts[1::2])), captured.err


def test_export_round_trip(capsys: pytest.CaptureFixture[str]) -> None:
    flags, err = export(capsys, json.dumps(ENTRIES), "--policy", "adaptive", "--max-k", "4",
                        "--profile", str(PROFILE))
    spec = json.loads(flags["--speculative-config"])
    assert spec["num_speculative_tokens"] == 4
    dense = dense_from_entries(spec["num_speculative_tokens_per_batch_size"], 32, 4)
    assert set(range(5)) <= set(dense[1:])
    cfg = config_from_additional(json.loads(flags["--additional-config"]))
    assert cfg is not None and cfg.is_adaptive
    assert cfg.adaptive_settings == {"profile": str(PROFILE), "max_k": 4}
    assert cfg.adaptive_config.max_k == 4 and cfg.adaptive_config.cost_prior is not None
    assert cfg.schedule.effective_grid == parse_schedule(ENTRIES).effective_grid
    # What the class checks at engine start holds for the exported table.
    assert engine_adaptive(cfg.adaptive_config, True, spec["num_speculative_tokens"], dense)
    assert "adaptive policy may choose" in err and "read by the vLLM engine process" in err


def test_export_reads_the_inputs_adaptive_block(capsys: pytest.CaptureFixture[str]) -> None:
    source = {"specsched": {"schedule": [[1, 16, 1]], "policy": "adaptive",
                            "adaptive": {"max_k": 3, "margin": 0.05}}}
    flags, _ = export(capsys, json.dumps(source))  # batch-only, but adaptive: specsched mode
    assert json.loads(flags["--speculative-config"])["num_speculative_tokens"] == 3
    body = json.loads(flags["--additional-config"])["specsched"]
    assert body["policy"] == "adaptive" and body["adaptive"] == {"max_k": 3, "margin": 0.05}
    # --max-k replaces the input's max_k; the default without one is the schedule's clamp or 4.
    flags, _ = export(capsys, json.dumps(source), "--max-k", "2")
    assert json.loads(flags["--additional-config"])["specsched"]["adaptive"]["max_k"] == 2
    flags, _ = export(capsys, json.dumps(ENTRIES), "--policy", "adaptive")
    assert json.loads(flags["--speculative-config"])["num_speculative_tokens"] == 4


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--policy", "adaptive", "--mode", "stock"], "needs specsched's scheduler class"),
        (["--profile", "p.json"], "--profile applies to --policy adaptive only"),
        (["--policy", "adaptive", "--max-k", "20"], r"max_k must be in \[1, 16\]"),
    ],
)
def test_export_errors(argv: list[str], match: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", json.dumps(ENTRIES), "--to", "vllm", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(match, err)


class FakeAdaptive:
    """What `AdaptiveRun` touches of `AdaptivePolicy`: the pending decision and `max_k`."""

    max_k = 4

    def __init__(self) -> None:
        self._pending: Pending | None = None


def test_outcome_pairs_with_the_decision_that_sized_it() -> None:
    policy = FakeAdaptive()
    run = AdaptiveRun(policy, "mean", None)  # type: ignore[arg-type]
    c1, c2 = (1, 0), (2, 3)
    first, second = Pending(c1, True, False, False), Pending(c2, False, True, False)
    for step, pending in ((1, first), (2, second)):
        policy._pending = pending
        run.on_decide(step)
    # vLLM verifies decision 1's drafts after decide(2): the policy must see decision 1's state,
    # with the K actually sent.
    run.before_observe(1, 0)
    assert policy._pending == Pending(c1, False, False, False) and run.observed == 1
    run.before_observe(2, 3)
    assert policy._pending == Pending(c2, True, True, False)
    run.before_observe(7, 1)  # no snapshot (dropped): nothing credited
    assert policy._pending is None
