"""Unit tier: the adaptive policy inside the real vLLM scheduler (CPU, fake model outputs).

A fake clock gives each step a time of 20 ms + 4 ms per verified draft, so the step cost the
policy learns is known. One request accepts every draft, then none: K must rise to max_k, then
fall to 0. Also: the same outcomes give the same K (ranks agree), engine-start checks against
the speculative config, hysteresis around the adaptive policy, the learned schedule at shutdown,
and exported adaptive flags building the class.
"""

from __future__ import annotations

import json
import logging
import shlex
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed here: run scripts/vllm/setup_env.sh")

from specsched.cli import main
from specsched.errors import UserError
from specsched.integrations.vllm import ContextAwareScheduler, config_from_obj, coverage_table
from specsched.integrations.vllm import scheduler as scheduler_module
from specsched.integrations.vllm.adaptive import StepKRoute
from specsched.policy import AdaptivePolicy
from specsched.policy.hysteresis import HysteresisPolicy
from specsched.schedule import parse_schedule

from .harness import add_request, make_scheduler, step, write_tiny_model
from .test_scheduler import SCHEDULE_2D

REPO = Path(__file__).resolve().parents[3]
BASE_S, PER_DRAFT_S = 0.020, 0.004


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, drafts: dict[str, int]) -> None:
        self.now += BASE_S + PER_DRAFT_S * sum(drafts.values())


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture()
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(scheduler_module, "_clock", fake)
    return fake


def adaptive_scheduler(model_dir: Path, block: dict[str, Any] | None = None,
                       table_ks: range = range(5), num_spec_tokens: int = 4,
                       **extra: Any) -> Any:
    s = parse_schedule(SCHEDULE_2D)
    return make_scheduler(
        model_dir, ContextAwareScheduler,
        table=coverage_table(s, 16, any_batch_ks=table_ks), num_spec_tokens=num_spec_tokens,
        additional_config={"specsched": {"schedule": SCHEDULE_2D, "policy": "adaptive",
                                         "adaptive": block or {"max_k": 4, "warmup_steps": 8},
                                         **extra}})


def accept_then_reject(sched: Any, clock: FakeClock, n: int = 40) -> tuple[list[int], list[int]]:
    add_request(sched, "a", prompt_len=50, max_tokens=2000)
    high = [step(sched, lambda _r, d: d, clock.advance).k for _ in range(n)]
    low = [step(sched, lambda _r, _d: 0, clock.advance).k for _ in range(n)]
    return high, low


def test_k_rises_then_drops_to_zero(model_dir: Path, clock: FakeClock) -> None:
    sched = adaptive_scheduler(model_dir)
    assert isinstance(sched.specsched_policy, StepKRoute)
    high, low = accept_then_reject(sched, clock)
    # Accepting everything at 4 ms a draft vs 20 ms a step: the largest K pays (5 tokens in
    # 36 ms vs 1 in 20 ms); the policy climbs there from the prior's K=1 (warm-up first).
    assert high[1] == 1 and max(high) == 4 and high[-10:] == [4] * 10
    # Accepting nothing: drafts only cost; K falls to 0 and stays there but for K = 1 retries
    # (a request idle at K = 0 drifts back toward its bucket's acceptance, so K > 0 is tried
    # again now and then: at most 4 of the last 20 steps, K <= 1 in the last 10). (min_gain
    # brought K to 0 four steps sooner, which moved the retries: two 2-step bursts in the last
    # 20 steps where there was one 4-step burst.)
    assert low[0] == 4 and 0 in low[:15] and max(low[-10:]) <= 1 and sum(low[-20:]) <= 4
    run = sched._specsched_adaptive
    assert run is not None and run.observed == len(high) + len(low) - 1  # first: prefill
    assert sched.specsched_usage.by_k[4] >= 20 and sched.specsched_usage.by_k[0] >= 20


def test_same_outcomes_same_k(model_dir: Path, clock: FakeClock) -> None:
    """No randomness: every rank that sees the same outcomes chooses the same K."""
    first = accept_then_reject(adaptive_scheduler(model_dir), clock, 25)
    assert accept_then_reject(adaptive_scheduler(model_dir), clock, 25) == first


@pytest.mark.parametrize(
    ("block", "table_ks", "match"),
    [
        ({"max_k": 5}, range(5), "adaptive max_k=5 is above .*num_speculative_tokens=4"),
        ({"max_k": 4}, range(4), r"any K in 0..4 but .* to K=\[4\].*--policy adaptive --max-k 4"),
        ({"max_k": 4, "bogus": 1}, range(5), r"adaptive: unknown key\(s\) bogus; allowed"),
        ({"profile": "/nonexistent.json"}, range(5), "adaptive profile /nonexistent.json cannot"),
        ({"per_request_k": True}, range(5), "per_request_k=True is not available in vLLM"),
    ],
)
def test_engine_start_errors(model_dir: Path, block: dict[str, Any], table_ks: range,
                             match: str) -> None:
    with pytest.raises(UserError, match=match) as info:
        adaptive_scheduler(model_dir, block, table_ks)
    assert "\n" not in str(info.value)


def test_max_k_defaults_to_num_speculative_tokens(model_dir: Path) -> None:
    sched = adaptive_scheduler(model_dir, {"warmup_steps": 8}, range(4), num_spec_tokens=3)
    assert sched.specsched_config.adaptive.max_k == sched.specsched_policy.max_k == 3
    assert sched.specsched_config.schedule.max_k == 3  # the prior is clamped to it


def test_hysteresis_wraps_the_adaptive_policy(model_dir: Path, clock: FakeClock) -> None:
    sched = adaptive_scheduler(model_dir, hysteresis={"persist_steps": 3})
    policy = sched.specsched_policy
    assert isinstance(policy, HysteresisPolicy) and isinstance(policy.inner, StepKRoute)
    assert isinstance(policy.inner.inner, AdaptivePolicy)
    high, _ = accept_then_reject(sched, clock, 20)
    assert max(high) == 4  # one cell throughout: the adaptive K passes through


def test_learned_schedule_logged_and_written(model_dir: Path, clock: FakeClock, tmp_path: Path,
                                             caplog: pytest.LogCaptureFixture) -> None:
    trace = tmp_path / "steps.jsonl"
    sched = adaptive_scheduler(model_dir, trace=str(trace), log_every=10)
    caplog.set_level(logging.INFO, logger=scheduler_module.LOGGER_NAME)
    accept_then_reject(sched, clock, 10)
    sched.shutdown()
    lines = [r.getMessage() for r in caplog.records if "learned over" in r.getMessage()]
    assert len(lines) == 3  # steps 10 and 20, shutdown
    assert lines[-1].startswith("specsched adaptive: learned over 20 steps (19 outcomes")
    assert "K by context from 1, 512" in lines[-1] and "steps.jsonl.learned.json" in lines[-1]
    learned = Path(str(trace) + ".learned.json")
    frozen = config_from_obj({"schedule": str(learned)}).schedule  # deployable statically
    assert frozen.arity == 5 and frozen.max_emitted_k <= 4
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    last = [r for r in records if r["kind"] == "learned"][-1]
    assert last["observed"] == 19 and last["entries"] == frozen.entries(5)
    decisions = [r for r in records if r["kind"] == "decision"]
    assert all(r["k"] == r["k_scheduled"] for r in decisions)  # the route carries the chosen K


def test_exported_adaptive_flags_build_the_scheduler(
    model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = REPO / "examples" / "profiles" / "smollm2_cpu_manual.profile.json"
    assert main(["export", json.dumps(SCHEDULE_2D), "--to", "vllm", "--policy", "adaptive",
                 "--max-k", "4", "--profile", str(profile), "--max-num-seqs", "16"]) == 0
    argv = shlex.split(capsys.readouterr().out)
    flags = dict(zip(argv[::2], argv[1::2]))
    sched = make_scheduler(
        model_dir, ContextAwareScheduler, speculative=json.loads(flags["--speculative-config"]),
        additional_config=json.loads(flags["--additional-config"]),
        max_num_seqs=int(flags["--max-num-seqs"]))
    adaptive = sched._specsched_adaptive.policy
    assert adaptive.max_k == 4 and adaptive.cfg.cost_prior is not None
    add_request(sched, "a", prompt_len=30)
    ks = [step(sched).k for _ in range(6)]
    assert all(0 <= k <= 4 for k in ks)
