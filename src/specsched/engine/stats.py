"""Speculative-decoding counters: per request (`SpecCounters` in `RequestStats`) and per run.

Terms (vLLM's spec-decode metrics): a *spec step* of a request is a verify step in which it had
>= 1 draft token; drafted / accepted counts are kept per draft position (position 0 = the first
draft token). Mean accepted length = 1 + accepted / spec steps: tokens a spec step yields
(accepted drafts + the recovered or bonus token), vLLM's "mean acceptance length".
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from specsched.schedule.model import INF


def _grow(values: list[int], n: int) -> None:
    if len(values) < n:
        values.extend([0] * (n - len(values)))


@dataclass(slots=True)
class SpecCounters:
    """Drafted / accepted tokens, in total and per draft position."""

    num_spec_steps: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    drafted_per_position: list[int] = field(default_factory=list)
    accepted_per_position: list[int] = field(default_factory=list)

    def record(self, num_drafted: int, num_accepted: int) -> None:
        """One verify of one request: positions 0..drafted-1 drafted, 0..accepted-1 accepted."""
        if num_drafted == 0:
            return
        self.num_spec_steps += 1
        self.num_draft_tokens += num_drafted
        self.num_accepted_tokens += num_accepted
        _grow(self.drafted_per_position, num_drafted)
        for j in range(num_drafted):
            self.drafted_per_position[j] += 1
        _grow(self.accepted_per_position, num_drafted)
        for j in range(num_accepted):
            self.accepted_per_position[j] += 1

    @property
    def acceptance_rate(self) -> float | None:
        if self.num_draft_tokens == 0:
            return None
        return self.num_accepted_tokens / self.num_draft_tokens

    @property
    def mean_accepted_length(self) -> float | None:
        if self.num_spec_steps == 0:
            return None
        return 1.0 + self.num_accepted_tokens / self.num_spec_steps

    @property
    def acceptance_per_position(self) -> list[float]:
        """P(position j accepted | position j drafted)."""
        return [
            a / d if d else 0.0
            for a, d in zip(self.accepted_per_position, self.drafted_per_position, strict=True)
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "num_spec_steps": self.num_spec_steps,
            "num_draft_tokens": self.num_draft_tokens,
            "num_accepted_tokens": self.num_accepted_tokens,
            "acceptance_rate": self.acceptance_rate,
            "mean_accepted_length": self.mean_accepted_length,
            "drafted_per_position": list(self.drafted_per_position),
            "accepted_per_position": list(self.accepted_per_position),
            "acceptance_per_position": self.acceptance_per_position,
        }


# Context buckets for acceptance when the schedule has no context axis (batch-only / static).
FIXED_CTX_BUCKETS: tuple[tuple[int, int], ...] = (
    (0, 511), (512, 1023), (1024, 2047), (2048, 4095), (4096, INF),
)


def bucket_label(ctx_ranges: tuple[tuple[int, int], ...], ctx: int) -> str:
    """'lo-hi' of the range holding ctx ('lo+' for the open-ended last one)."""
    for i, (lo, hi) in enumerate(ctx_ranges):
        if ctx <= hi or i == len(ctx_ranges) - 1:
            return f"{lo}+" if i == len(ctx_ranges) - 1 else f"{lo}-{hi}"
    raise AssertionError("unreachable")


@dataclass(frozen=True, slots=True)
class StepStats:
    """One engine step (`LLMEngine.last_step`). Times in seconds (perf_counter), split as in
    `RunStats`; wall_s = draft_s + verify_s + overhead_s."""

    wall_s: float
    draft_s: float
    verify_s: float
    overhead_s: float
    num_decode: int  # decoding requests in the step
    num_prefill: int  # prefill chunks in the step
    num_new_tokens: int  # tokens fed to the target forward (prompt chunks + last tokens + drafts)
    num_spec_tokens: int  # draft tokens verified
    num_accepted_tokens: int  # of those, accepted
    routed_k: int | None  # the router's K (None: no decoding request in the step)
    # per decoding request, in schedule order: drafts verified and, of them, accepted
    spec_tokens: tuple[int, ...] = ()
    accepted_tokens: tuple[int, ...] = ()
    num_prefill_tokens: int = 0  # prompt tokens of the step's prefill chunks
    request_ids: tuple[Hashable, ...] = ()  # the decoding requests, in the order of spec_tokens

    def to_row(self, index: Mapping[Hashable, int] | None = None) -> list[Any]:
        """One line of a trial's step log: [wall ms, prefill tokens, K per decoding request,
        accepted per decoding request], and with `index` (request id -> the request's place in
        the trial) those places, so a request's acceptance can be read back from the log."""
        row = [round(self.wall_s * 1e3, 2), self.num_prefill_tokens, list(self.spec_tokens),
               list(self.accepted_tokens)]
        if index is not None:
            row.append([index.get(rid, -1) for rid in self.request_ids])
        return row


# the most steps `RunStats.step_log` keeps (the first ones): a long-lived engine's log stays
# bounded; a bench trial (tens to hundreds of steps) fits whole
MAX_STEP_LOG = 20_000


@dataclass(slots=True)
class RunStats:
    """Aggregate over one `LLM.generate` call (or an engine's lifetime until `reset`).

    Times are wall seconds from `time.perf_counter` around the phases of each step:
    draft = the drafter's propose; verify = the target forward (the verify forward on spec steps,
    the plain forward otherwise) plus verification/sampling; overhead = the rest of the step
    (scheduling, routing, metadata, bookkeeping).
    """

    start_time: float = field(default_factory=time.perf_counter)
    end_time: float | None = None
    num_steps: int = 0
    num_spec_steps: int = 0  # steps where some request had >= 1 draft token
    num_output_tokens: int = 0
    spec: SpecCounters = field(default_factory=SpecCounters)
    by_ctx_bucket: dict[str, SpecCounters] = field(default_factory=dict)
    k_histogram: dict[int, int] = field(default_factory=dict)  # routed K -> decode steps
    draft_s: float = 0.0
    verify_s: float = 0.0
    overhead_s: float = 0.0
    # every step as it ran (up to MAX_STEP_LOG): what a K policy did and what it cost, so a
    # trial can be read step by step without replaying it (a replay is another trial: a
    # closed-loop policy reads step times)
    step_log: list[StepStats] = field(default_factory=list)

    def add_step(self, step: StepStats, end_time: float) -> None:
        """Fold one step's times into the totals (K and acceptance are recorded per request)."""
        if len(self.step_log) < MAX_STEP_LOG:
            self.step_log.append(step)
        self.num_steps += 1
        self.num_spec_steps += int(step.num_spec_tokens > 0)
        self.draft_s += step.draft_s
        self.verify_s += step.verify_s
        self.overhead_s += step.overhead_s
        self.end_time = end_time

    def record_k(self, k: int) -> None:
        self.k_histogram[k] = self.k_histogram.get(k, 0) + 1

    def record_request(self, bucket: str, num_drafted: int, num_accepted: int) -> None:
        self.spec.record(num_drafted, num_accepted)
        if num_drafted:
            self.by_ctx_bucket.setdefault(bucket, SpecCounters()).record(num_drafted, num_accepted)

    @property
    def wall_s(self) -> float:
        return (self.end_time or time.perf_counter()) - self.start_time

    @property
    def tokens_per_s(self) -> float | None:
        wall = self.wall_s
        return self.num_output_tokens / wall if wall > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "num_steps": self.num_steps,
            "num_spec_steps": self.num_spec_steps,
            "num_output_tokens": self.num_output_tokens,
            "wall_s": self.wall_s,
            "tokens_per_s": self.tokens_per_s,
            "time_s": {"draft": self.draft_s, "verify": self.verify_s,
                       "overhead": self.overhead_s},
            "k_histogram": {str(k): n for k, n in sorted(self.k_histogram.items())},
            **self.spec.to_dict(),
            "by_ctx_bucket": {b: c.to_dict() for b, c in self.by_ctx_bucket.items()},
        }
