"""Unit tier: the real vLLM scheduler (CPU, fake model outputs) with specsched's scheduler class.

Asserts the K scheduled each step follows the 2-D schedule as contexts grow across a bucket
boundary, with the decode-only pool and each aggregator, under sync and async scheduling; that a
3-item schedule (and no specsched config at all) reproduces stock vLLM exactly; and that bad
configurations fail at engine start with one-line errors.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "vllm",
    reason="vLLM is not installed here: run scripts/vllm/setup_env.sh, then use "
    ".venv-vllm/bin/python -m pytest tests/integrations/vllm",
)

from vllm.v1.core.sched.async_scheduler import AsyncScheduler
from vllm.v1.core.sched.scheduler import Scheduler

from specsched.errors import ScheduleError, UserError
from specsched.integrations.vllm import (
    AsyncContextAwareScheduler,
    ContextAwareScheduler,
    coverage_table,
)
from specsched.policy.route import CtxAgg, context_representative
from specsched.schedule import INF, parse_schedule

from .harness import add_request, make_scheduler, step, write_tiny_model

# K=1 below context 64, K=3 from 64 for batches of 1-4; K=2 / K=0 for batches of 5-16.
SCHEDULE_2D = [
    [1, 4, 1, 63, 1],
    [1, 4, 64, INF, 3],
    [5, 16, 1, 63, 2],
    [5, 16, 64, INF, 0],
]
# Three context columns for the aggregator test (batch sizes 1-16).
SCHEDULE_3COL = [[1, 16, 1, 63, 1], [1, 16, 64, 127, 2], [1, 16, 128, INF, 3]]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny-llama"))


def specsched_scheduler(
    model_dir: Path, entries: list[list[int]], async_scheduling: bool = False, **extra: Any
) -> Any:
    s = parse_schedule(entries)
    return make_scheduler(
        model_dir,
        ContextAwareScheduler,
        table=coverage_table(s, 16),
        num_spec_tokens=s.max_emitted_k,
        additional_config={"specsched": {"schedule": entries, **extra}},
        async_scheduling=async_scheduling,
    )


def expected_k(entries: list[list[int]], st: Any, agg: str = "mean") -> int:
    """K from the test's own arithmetic: decode-only pool, representative, schedule cell."""
    s = parse_schedule(entries)
    decode = [c for r, c in st.computed.items() if c >= st.prompt[r]]
    pool = decode or list(st.computed.values())
    return s.k_for(st.batch_size, context_representative(pool, agg))


@pytest.mark.parametrize("async_scheduling", [False, True], ids=["sync", "async"])
def test_k_crosses_context_boundary_single_request(model_dir: Path, async_scheduling: bool) -> None:
    sched = specsched_scheduler(model_dir, SCHEDULE_2D, async_scheduling)
    add_request(sched, "a", prompt_len=50)
    steps = [step(sched) for _ in range(12)]
    # Prefill (pool falls back to all requests, ctx 0 -> K=1); then 1 verified draft per step
    # (+2 tokens) until context 64 is reached; from there K=3. A step verifies the drafts
    # proposed with the previous step's K, so the first +4 comes one step after the switch.
    assert [st.computed["a"] for st in steps] == [0, 50, 52, 54, 56, 58, 60, 62, 64, 66, 70, 74]
    assert [st.k for st in steps] == [1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3]
    # vLLM honoured each K: the drafts verified in a step are the K chosen in the step before.
    assert [st.num_drafts["a"] for st in steps[2:]] == [st.k for st in steps[1:-1]]
    usage = sched.specsched_usage
    assert usage.steps == 12 and dict(usage.by_k) == {1: 8, 3: 4}
    assert usage.all_pool_steps == 1


@pytest.mark.parametrize("async_scheduling", [False, True], ids=["sync", "async"])
def test_k_follows_schedule_with_batch_of_three(model_dir: Path, async_scheduling: bool) -> None:
    sched = specsched_scheduler(model_dir, SCHEDULE_2D, async_scheduling)
    for i, n in enumerate((30, 40, 48)):
        add_request(sched, f"r{i}", prompt_len=n)
    steps = [step(sched) for _ in range(18)]
    assert all(st.batch_size == 3 for st in steps)
    assert [st.k for st in steps] == [expected_k(SCHEDULE_2D, st) for st in steps]
    ks = [st.k for st in steps]
    first_high = ks.index(3)
    assert set(ks[:first_high]) == {1} and set(ks[first_high:]) == {3}  # crossed ctx 64 once
    mean_ctx = sum(steps[first_high].computed.values()) // 3
    assert mean_ctx >= 64 > sum(steps[first_high - 1].computed.values()) // 3


def test_batch_size_row_changes_k(model_dir: Path) -> None:
    sched = specsched_scheduler(model_dir, SCHEDULE_2D)
    for i in range(6):
        add_request(sched, f"r{i}", prompt_len=20)
    steps = [step(sched) for _ in range(4)]
    assert all(st.batch_size == 6 for st in steps)
    assert [st.k for st in steps] == [2, 2, 2, 2]  # row 5-16, context < 64


def test_decode_only_pool(model_dir: Path) -> None:
    sched = specsched_scheduler(model_dir, SCHEDULE_2D)
    add_request(sched, "long", prompt_len=100)
    step(sched)  # prefill
    step(sched)  # decoding at context 100 -> K=3
    add_request(sched, "new", prompt_len=20)
    st = step(sched)
    assert st.batch_size == 2 and st.computed["new"] == 0 and st.computed["long"] >= 100
    # Over all requests the mean context is < 64 (K=1); the decode-only pool is {long} -> K=3.
    assert sum(st.computed.values()) // 2 < 64
    assert st.k == 3
    # With nobody decoding yet, the pool falls back to all requests.
    fresh = specsched_scheduler(model_dir, SCHEDULE_2D)
    add_request(fresh, "p", prompt_len=200)
    assert step(fresh).k == 1  # ctx 0 (nothing computed) -> first column


@pytest.mark.parametrize(("agg", "k"), [(CtxAgg.MEAN, 2), (CtxAgg.MEDIAN, 1), (CtxAgg.MAX, 3)])
def test_each_aggregator(model_dir: Path, agg: CtxAgg, k: int) -> None:
    sched = specsched_scheduler(model_dir, SCHEDULE_3COL, ctx_agg=agg.value)
    for i, n in enumerate((30, 40, 200)):
        add_request(sched, f"r{i}", prompt_len=n)
    step(sched)  # prefill all three
    st = step(sched)  # contexts 30, 40, 200: mean 90, median 40, max 200
    assert sorted(st.computed.values()) == [30, 40, 200]
    assert st.k == k == expected_k(SCHEDULE_3COL, st, agg.value)


def run_arrivals(sched: Any) -> list[tuple[int, int]]:
    """A workload whose batch size moves through 1..7 and back: (batch size, K) per step."""
    trace = []
    for i in range(7):
        add_request(sched, f"r{i}", prompt_len=10 + 7 * i, max_tokens=40 + 6 * i)
        trace.append(step(sched))
    while sched.get_num_unfinished_requests():
        trace.append(step(sched))
    return [(st.batch_size, st.k) for st in trace]


@pytest.mark.parametrize("with_specsched_config", [True, False], ids=["3-item", "no-config"])
def test_three_item_schedule_matches_stock(model_dir: Path, with_specsched_config: bool) -> None:
    table = [[1, 2, 4], [3, 4, 2], [6, 16, 1]]  # a gap at 5 inherits K=2, as in stock vLLM
    stock = make_scheduler(model_dir, Scheduler, table=table, num_spec_tokens=3)
    extra = {"specsched": {"schedule": table}} if with_specsched_config else None
    ours = make_scheduler(
        model_dir, ContextAwareScheduler, table=table, num_spec_tokens=3, additional_config=extra
    )
    expected = run_arrivals(stock)
    assert {bs for bs, _ in expected} >= {1, 2, 3, 4, 5, 6, 7}
    assert {k for _, k in expected} == {1, 2, 3}  # K=4 clamped to num_speculative_tokens
    assert run_arrivals(ours) == expected


def test_async_dispatch(model_dir: Path) -> None:
    sched = specsched_scheduler(model_dir, SCHEDULE_2D, async_scheduling=True)
    assert isinstance(sched, AsyncContextAwareScheduler)
    assert isinstance(sched, AsyncScheduler)
    sync = specsched_scheduler(model_dir, SCHEDULE_2D, async_scheduling=False)
    assert type(sync) is ContextAwareScheduler


def test_trace_file(model_dir: Path, tmp_path: Path) -> None:
    trace = tmp_path / "steps.jsonl"
    sched = specsched_scheduler(model_dir, SCHEDULE_2D, trace=str(trace))
    add_request(sched, "a", prompt_len=60)
    steps = [step(sched) for _ in range(4)]
    sched.shutdown()
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    records = [r for r in lines if r["kind"] == "decision"]
    assert [r["k_scheduled"] for r in records] == [st.k for st in steps] == [1, 1, 1, 3]
    assert [r["ctx_repr"] for r in records] == [0, 60, 62, 64]
    assert records[1]["pool"] == "decode" and records[1]["bucket"] == [1, 4, 1, 63]


def test_missing_k_in_table_fails_at_start(model_dir: Path) -> None:
    with pytest.raises(UserError, match=r"emits K=\[0, 3\].*--max-num-seqs 16"):
        make_scheduler(
            model_dir,
            ContextAwareScheduler,
            table=[[1, 4, 1], [5, 16, 2]],  # the stock projection alone lacks K=3
            num_spec_tokens=3,
            additional_config={"specsched": {"schedule": SCHEDULE_2D}},
        )


def test_no_dynamic_table_fails_at_start(model_dir: Path) -> None:
    with pytest.raises(UserError, match="num_speculative_tokens_per_batch_size"):
        make_scheduler(
            model_dir,
            ContextAwareScheduler,
            table=None,
            num_spec_tokens=3,
            additional_config={"specsched": {"schedule": SCHEDULE_2D}},
        )


def test_bad_schedule_fails_at_start(model_dir: Path) -> None:
    with pytest.raises(ScheduleError, match="rectangular") as info:
        make_scheduler(
            model_dir,
            ContextAwareScheduler,
            table=[[1, 16, 1]],
            num_spec_tokens=3,
            additional_config={"specsched": {"schedule": SCHEDULE_2D[:3]}},
        )
    assert "\n" not in str(info.value)


def test_debug_log_line_per_step(model_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    from specsched.integrations.vllm.scheduler import LOGGER_NAME

    sched = specsched_scheduler(model_dir, SCHEDULE_2D, log_every=2)
    caplog.set_level(logging.DEBUG, logger=LOGGER_NAME)
    add_request(sched, "a", prompt_len=60)
    for _ in range(4):
        step(sched)
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert len(debug) == 4
    assert debug[3] == "specsched step 4: bs=1 pool=decode ctx=64 bucket=[1, 4, 64, 2147483647] K=3"
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert info[-1] == "specsched K usage over 4 steps: K=1: 3, K=3: 1"
