"""Unit tier: per-request outcomes read back from the real vLLM scheduler (CPU, fake outputs).

The fake runner accepts the first draft of every request and rejects the rest, so acceptance is
known exactly: position 0 always accepted, position 1 always rejected. Asserts what reaches the
policy's `observe`, the per-cell Prometheus counters, the trace, the planner's import of both,
hysteresis inside the real scheduler, the runner guard, and exported flags building the class.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed here: run scripts/vllm/setup_env.sh")

from prometheus_client import CollectorRegistry, generate_latest
from vllm.v1.core.sched.scheduler import Scheduler

from specsched.cli import main
from specsched.errors import UserError
from specsched.integrations.vllm.metrics import PromCounters
from specsched.planner.vllm_trace import acceptance_from_metrics, acceptance_from_trace
from specsched.policy import BatchState, KDecision, KPolicy, StepOutcome
from specsched.policy.route import CtxAgg
from specsched.schedule import parse_schedule

from .harness import Step, add_request, make_scheduler, step, write_tiny_model
from .test_scheduler import SCHEDULE_2D, specsched_scheduler


def first_only(_: str, drafts: int) -> int:
    return min(drafts, 1)


class Recorder:
    """A KPolicy wrapper keeping every outcome it is shown."""

    def __init__(self, inner: KPolicy) -> None:
        self.inner = inner
        self.seen: list[StepOutcome] = []

    @property
    def max_k(self) -> int:
        return self.inner.max_k

    def decide(self, batch: BatchState) -> KDecision:
        return self.inner.decide(batch)

    def observe(self, outcome: StepOutcome) -> None:
        self.seen.append(outcome)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny-llama"))


def run_two(sched: Any, n: int = 14) -> list[Step]:
    add_request(sched, "a", prompt_len=50)
    add_request(sched, "b", prompt_len=56)
    return [step(sched, first_only) for _ in range(n)]


@pytest.mark.parametrize("async_scheduling", [False, True], ids=["sync", "async"])
def test_outcomes_reach_the_policy(model_dir: Path, async_scheduling: bool) -> None:
    sched = specsched_scheduler(model_dir, SCHEDULE_2D, async_scheduling)
    recorder = Recorder(sched.specsched_policy)
    sched.specsched_policy = recorder
    steps = run_two(sched)
    assert {st.k for st in steps} == {1, 3}
    # Step 0 (prefill) verifies nothing and has no earlier decision: one outcome per later step.
    assert len(recorder.seen) == len(steps) - 1
    for prev, cur, out in zip(steps, steps[1:], recorder.seen):
        assert out.step_k == prev.k and out.batch_size == prev.batch_size == 2
        assert out.step_time_s is not None and out.step_time_s >= 0
        got = {r.request_id: (r.num_computed_tokens, r.num_spec_tokens, r.num_accepted_tokens)
               for r in out.requests}
        want = {r: (cur.computed[r], cur.num_drafts[r], min(cur.num_drafts[r], 1))
                for r in cur.computed}
        assert got == want
        assert all(r.num_spec_tokens == prev.k for r in out.requests)  # sized by the decision


def test_a_prefill_chunk_reaches_the_policy_at_its_context(model_dir: Path) -> None:
    sched = specsched_scheduler(model_dir, SCHEDULE_2D)
    recorder = Recorder(sched.specsched_policy)
    sched.specsched_policy = recorder
    add_request(sched, "a", prompt_len=50)
    steps = [step(sched, first_only) for _ in range(3)]
    add_request(sched, "b", prompt_len=30)  # prefilled while a decodes
    steps += [step(sched, first_only) for _ in range(3)]
    j = next(i for i, st in enumerate(steps) if "b" in st.computed)
    assert steps[j].computed["b"] == 0 and "a" in steps[j].computed
    out = recorder.seen[j - 1]  # step 0 (a's prefill) has no outcome
    assert out.prefill_contexts == (29,) and out.num_prefill_tokens == 30  # 0 + 30 - 1
    assert [r.request_id for r in out.requests] == ["a"]
    later = recorder.seen[j]  # b decodes now: no chunk
    assert later.prefill_contexts == () and later.num_prefill_tokens == 0


def test_counters_trace_and_planner_import(model_dir: Path, tmp_path: Path) -> None:
    trace = tmp_path / "steps.jsonl"
    sched = specsched_scheduler(model_dir, SCHEDULE_2D, trace=str(trace))
    registry = CollectorRegistry()
    sched._specsched_counters = PromCounters(registry)
    steps = run_two(sched)
    sched.shutdown()

    def value(name: str, **labels: str) -> float:
        return registry.get_sample_value(f"specsched_{name}_total", labels) or 0.0

    for k in (1, 3):
        ctx = "1-63" if k == 1 else "64-inf"
        assert value("steps", bs_bucket="1-4", ctx_bucket=ctx, k=str(k)) == sum(
            st.k == k for st in steps)
    # Expected per request context bucket from the test's own arithmetic.
    want: dict[str, list[int]] = {}  # ctx bucket -> [drafts, tokens, tested0, tested1, acc0]
    for cur in steps[1:]:
        for r, d in cur.num_drafts.items():
            bucket = "1-63" if cur.computed[r] < 64 else "64-inf"
            w = want.setdefault(bucket, [0, 0, 0, 0, 0])
            w[0] += 1
            w[1] += d
            w[2] += 1
            w[3] += d >= 2
            w[4] += 1
    for bucket, (drafts, tokens, tested0, tested1, acc0) in want.items():
        cell = {"bs_bucket": "1-4", "ctx_bucket": bucket}
        assert value("num_drafts", **cell) == drafts
        assert value("num_draft_tokens", **cell) == tokens
        assert value("num_accepted_tokens", **cell) == acc0
        assert value("num_tested_tokens_per_pos", **cell, position="0") == tested0
        assert value("num_tested_tokens_per_pos", **cell, position="1") == tested1
        assert value("num_accepted_tokens_per_pos", **cell, position="0") == acc0
        assert value("num_accepted_tokens_per_pos", **cell, position="1") == 0
    # The trace: a schedule record, one decision per step, one outcome per verified step.
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    kinds = [r["kind"] for r in records]
    assert kinds[0] == "schedule" and kinds.count("decision") == len(steps)
    assert kinds.count("outcome") == len(steps) - 1
    # The planner reads the same acceptance from either source: a_0 = 1, a_1 = 0 where tested.
    from_trace = acceptance_from_trace(trace)
    metrics = tmp_path / "metrics.txt"
    metrics.write_bytes(generate_latest(registry))
    assert acceptance_from_metrics(metrics) == from_trace
    assert [p.a for p in from_trace] == [(1.0,), (1.0, 0.0)]
    assert [p.n for p in from_trace] == [want["1-63"][0], want["64-inf"][0]]
    assert 50 <= from_trace[0].ctx < 64 <= from_trace[1].ctx


def test_hysteresis_in_the_real_scheduler(model_dir: Path) -> None:
    sched = specsched_scheduler(model_dir, SCHEDULE_2D, hysteresis={"persist_steps": 3})
    add_request(sched, "a", prompt_len=50)
    steps = [step(sched) for _ in range(13)]
    # Without hysteresis K turns 3 at context 64 (test_scheduler); here it waits 3 steps.
    assert [st.computed["a"] for st in steps] == [0, 50, 52, 54, 56, 58, 60, 62, 64, 66, 68, 70, 74]
    assert [st.k for st in steps] == [1] * 10 + [3] * 3


def test_v2_runner_with_an_ignoring_drafter_is_refused(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # vLLM on CPU cannot validate a V2 config (no Triton): fake the flag the scheduler reads.
    stock_init = Scheduler.__init__

    def init_as_v2(self: Any, *args: Any, **kwargs: Any) -> None:
        stock_init(self, *args, **kwargs)
        self.use_v2_model_runner = True

    monkeypatch.setattr(Scheduler, "__init__", init_as_v2)
    with pytest.raises(UserError, match="VLLM_USE_V2_MODEL_RUNNER=0") as info:
        specsched_scheduler(model_dir, SCHEDULE_2D)
    assert "'ngram' drafter ignores the scheduler's K" in str(info.value)
    assert "\n" not in str(info.value)


def test_exported_flags_build_the_scheduler(
    model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    proposal = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2,
                "prompt_lookup_max": 4, "speculative_token_schedule": SCHEDULE_2D,
                "ctx_agg": "max"}
    assert main(["export", json.dumps(proposal), "--to", "vllm", "--max-num-seqs", "16"]) == 0
    argv = shlex.split(capsys.readouterr().out)
    flags = dict(zip(argv[::2], argv[1::2]))
    spec = json.loads(flags["--speculative-config"])
    sched = make_scheduler(
        model_dir, scheduler_cls=_scheduler_cls(flags["--scheduler-cls"]), speculative=spec,
        additional_config=json.loads(flags["--additional-config"]),
        max_num_seqs=int(flags["--max-num-seqs"]))
    cfg = sched.specsched_config
    assert cfg.ctx_agg is CtxAgg.MAX
    assert cfg.schedule.entries() == parse_schedule(SCHEDULE_2D).entries()
    vllm_spec = sched.vllm_config.speculative_config
    assert (vllm_spec.method, vllm_spec.num_speculative_tokens) == ("ngram", 3)
    assert (vllm_spec.prompt_lookup_min, vllm_spec.prompt_lookup_max) == (2, 4)


def _scheduler_cls(path: str) -> Any:
    import importlib

    module, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)
