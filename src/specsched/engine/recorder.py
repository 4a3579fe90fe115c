"""Step statistics: a clock around the draft and verify phases, what verification did per request
(`step_outcome`, fed back to the K policy), and the one function that records a step
(`record_step`: per-request counters, the run aggregate, `LLMEngine.last_step`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum

from specsched.engine.sched.scheduler import SchedulerOutput
from specsched.engine.spec.verify import VerifyResult
from specsched.engine.stats import RunStats, StepStats, bucket_label
from specsched.policy import KDecision, RequestOutcome, StepOutcome


class Phase(str, Enum):
    DRAFT = "draft"  # the drafter's propose
    VERIFY = "verify"  # the target forward + verification / sampling


@dataclass(slots=True)
class StepClock:
    """perf_counter seconds: the step's start and the time spent in each phase."""

    start: float = field(default_factory=time.perf_counter)
    draft_s: float = 0.0
    verify_s: float = 0.0

    @contextmanager
    def phase(self, which: Phase) -> Iterator[None]:
        t0 = time.perf_counter()
        yield
        if which is Phase.DRAFT:
            self.draft_s += time.perf_counter() - t0
        else:
            self.verify_s += time.perf_counter() - t0


def step_outcome(out: SchedulerOutput, result: VerifyResult, decision: KDecision) -> StepOutcome:
    """Drafts and accepted drafts of every decoding entry, in schedule order. Call before the
    step's postprocess advances `num_computed_tokens` (the outcome names the drafts' context)."""
    accepted = result.num_accepted.tolist()  # [rows]: one per sampling entry
    requests: list[RequestOutcome] = []
    row = 0
    for s in out.scheduled:
        if not s.samples:
            continue
        if not s.seq.is_prefilling:
            requests.append(RequestOutcome(s.seq.request_id, s.seq.num_computed_tokens,
                                           s.num_spec_tokens, accepted[row]))
        row += 1
    chunks = [s for s in out.scheduled if s.seq.is_prefilling and s.num_new_tokens > 0]
    prefill = sum(s.num_new_tokens for s in chunks)
    contexts = tuple(s.seq.num_computed_tokens + s.num_new_tokens - 1 for s in chunks)
    return StepOutcome(len(out.scheduled), tuple(requests), None, decision.step_k, prefill,
                       contexts)


def record_step(
    run: RunStats,
    out: SchedulerOutput,
    decision: KDecision,
    outcome: StepOutcome,
    clock: StepClock,
    ctx_buckets: tuple[tuple[int, int], ...],
) -> StepStats:
    """Fold one finished step into each request's stats and the run aggregate; return it."""
    now = time.perf_counter()
    by_id = {r.request_id: r for r in outcome.requests}
    for s, k in zip(out.scheduled, decision.num_spec_tokens, strict=True):
        st = s.seq.stats
        if st.first_scheduled_time is None:
            st.first_scheduled_time = now
        st.num_steps += 1
        r = by_id.get(s.seq.request_id)
        if r is None:
            st.num_prefill_steps += 1
            continue
        st.num_decode_steps += 1
        st.k_histogram[k] = st.k_histogram.get(k, 0) + 1
        st.spec.record(r.num_spec_tokens, r.num_accepted_tokens)
        bucket = bucket_label(ctx_buckets, r.num_computed_tokens)
        run.record_request(bucket, r.num_spec_tokens, r.num_accepted_tokens)
    if outcome.requests:
        run.record_k(decision.step_k)
    wall = now - clock.start
    step = StepStats(
        wall_s=wall,
        draft_s=clock.draft_s,
        verify_s=clock.verify_s,
        overhead_s=wall - clock.verify_s - clock.draft_s,
        num_decode=len(outcome.requests),
        num_prefill=len(out.scheduled) - len(outcome.requests),
        num_new_tokens=out.num_tokens,
        num_spec_tokens=sum(r.num_spec_tokens for r in outcome.requests),
        num_accepted_tokens=sum(r.num_accepted_tokens for r in outcome.requests),
        routed_k=decision.step_k if outcome.requests else None,
        spec_tokens=tuple(r.num_spec_tokens for r in outcome.requests),
        accepted_tokens=tuple(r.num_accepted_tokens for r in outcome.requests),
        num_prefill_tokens=outcome.num_prefill_tokens,
        request_ids=tuple(r.request_id for r in outcome.requests),
    )
    run.add_step(step, now)
    return step
