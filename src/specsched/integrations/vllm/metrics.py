"""Counters per schedule cell (batch bucket x context bucket) on vLLM's Prometheus registry.

Names (Prometheus adds `_total`; never the `vllm:` prefix, which vLLM unregisters and owns):
- `specsched_steps{bs_bucket, ctx_bucket, k}`: K decisions, by the cell the step routed to;
- `specsched_num_drafts`, `specsched_num_draft_tokens`, `specsched_num_accepted_tokens`,
  `specsched_draft_context_tokens` (sum of the drafting request's context, so context / drafts
  is the cell's mean context) `{bs_bucket, ctx_bucket}`;
- `specsched_num_tested_tokens_per_pos`, `specsched_num_accepted_tokens_per_pos`
  `{bs_bucket, ctx_bucket, position}`: draft position p (0-based) was *tested* when positions
  0..p-1 were accepted and p was drafted; conditional acceptance a_p = accepted_p / tested_p.
For the draft counters `bs_bucket` is the batch range of the decision that sized the drafts and
`ctx_bucket` the context range holding the drafting request's own context (acceptance belongs
to the request's context). Labels are the ranges a cell serves (`"1-4"`, `"512-inf"`; a batch
range reaches up to the next range's start, the last one to infinity, as vLLM's lookup): at most
cells x K (x positions) series. `specsched profile --from-vllm-metrics` reads them back.

Where they show up: the scheduler runs in vLLM's engine-core process, a separate process unless
`VLLM_ENABLE_V1_MULTIPROCESSING=0`; `/metrics` (API server) reads other processes' counters only
through `PROMETHEUS_MULTIPROC_DIR` (set by the operator before `vllm serve`, or by vLLM itself
with `--api-server-count` >= 2). `exposure` says which case holds; it is logged at start.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from specsched.integrations.vllm.outcomes import FinishedStep
from specsched.schedule import INF, Bucket, Schedule

if TYPE_CHECKING:  # prometheus_client is optional (vLLM installs it)
    from prometheus_client import CollectorRegistry, Counter

PREFIX = "specsched_"


def range_label(lo: int, hi: int) -> str:
    return f"{lo}-{'inf' if hi >= INF else hi}"


def cell_labels(schedule: Schedule, bucket: Bucket) -> tuple[str, str]:
    """(batch label, context label) of a cell: the batch sizes and contexts it serves."""
    los = [lo for lo, _ in schedule.batch_ranges]
    i = los.index(bucket.bs_lo)
    bs_hi = los[i + 1] - 1 if i + 1 < len(los) else INF
    return range_label(bucket.bs_lo, bs_hi), range_label(bucket.ctx_lo, bucket.ctx_hi)


@dataclass(slots=True)
class CellCounts:
    """Draft outcomes of one (batch bucket, context bucket) cell."""

    drafts: int = 0  # requests that verified >= 1 draft
    draft_tokens: int = 0
    accepted_tokens: int = 0
    context_tokens: int = 0
    tested: list[int] = field(default_factory=list)  # [positions]
    accepted: list[int] = field(default_factory=list)  # [positions]

    def add(self, ctx: int, num_drafts: int, num_accepted: int) -> None:
        self.drafts += 1
        self.draft_tokens += num_drafts
        self.accepted_tokens += num_accepted
        self.context_tokens += ctx
        reach = min(num_drafts, num_accepted + 1)  # positions 0..reach-1 were tested
        grow = reach - len(self.tested)
        if grow > 0:
            self.tested.extend([0] * grow)
            self.accepted.extend([0] * grow)
        for p in range(reach):
            self.tested[p] += 1
        for p in range(num_accepted):
            self.accepted[p] += 1


def outcome_cells(schedule: Schedule, step: FinishedStep) -> dict[tuple[str, str], CellCounts]:
    """Group one step's draft outcomes by (decision's batch bucket, request's context bucket)."""
    bs_label = cell_labels(schedule, step.decided.route.bucket)[0]
    ranges = schedule.ctx_ranges
    cells: dict[tuple[str, str], CellCounts] = {}
    for r in step.outcome.requests:
        if r.num_spec_tokens <= 0:
            continue
        lo, hi = ranges[schedule.col_for(r.num_computed_tokens)]
        cell = cells.setdefault((bs_label, range_label(lo, hi)), CellCounts())
        cell.add(r.num_computed_tokens, r.num_spec_tokens, r.num_accepted_tokens)
    return cells


def exposure(env: Mapping[str, str]) -> tuple[bool, str]:
    """(counters reach /metrics, the start-up line saying where they are)."""
    where = env.get("PROMETHEUS_MULTIPROC_DIR")
    if where:
        return True, f"specsched: per-cell counters (specsched_*) reach /metrics through " \
                     f"PROMETHEUS_MULTIPROC_DIR={where}"
    if env.get("VLLM_ENABLE_V1_MULTIPROCESSING", "1") == "0":
        return True, "specsched: per-cell counters (specsched_*) are on vLLM's /metrics registry " \
                     "(in-process engine core)"
    return False, (
        "specsched: per-cell counters (specsched_*) do NOT reach /metrics: the engine core is its "
        "own process; export PROMETHEUS_MULTIPROC_DIR=<a fresh empty directory> before `vllm "
        "serve` (or use --api-server-count >= 2); the trace and the K-usage summary still have them"
    )


def _counter(cls: type[Counter], registry: CollectorRegistry, name: str, doc: str,
             labels: tuple[str, ...]) -> Counter:
    try:
        return cls(name, doc, labels, registry=registry)
    except ValueError:  # already registered in this process (another engine, a test): share it
        existing = registry._names_to_collectors.get(name)
        if existing is None:
            raise
        return existing


class PromCounters:
    """The counters above, created once per process (and shared by the engines in it)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        from prometheus_client import REGISTRY, Counter, values

        if os.environ.get("PROMETHEUS_MULTIPROC_DIR") and not getattr(
            values.ValueClass, "_multiprocess", False
        ):
            # prometheus_client picks file-backed values at import; an engine process forked
            # before the variable was set would keep in-memory ones that /metrics never sees.
            values.ValueClass = values.MultiProcessValue()
        reg = REGISTRY if registry is None else registry
        cell = ("bs_bucket", "ctx_bucket")

        def make(name: str, doc: str, labels: tuple[str, ...] = cell) -> Counter:
            return _counter(Counter, reg, PREFIX + name, doc, labels)

        self.steps = make("steps", "K decisions per schedule cell and K", (*cell, "k"))
        self.drafts = make("num_drafts", "requests that verified drafts")
        self.draft_tokens = make("num_draft_tokens", "draft tokens verified")
        self.accepted_tokens = make("num_accepted_tokens", "draft tokens accepted")
        self.context_tokens = make("draft_context_tokens", "sum of drafting requests' contexts")
        self.tested = make("num_tested_tokens_per_pos", "draft positions tested",
                           (*cell, "position"))
        self.accepted = make("num_accepted_tokens_per_pos", "draft positions accepted",
                             (*cell, "position"))

    def record_step(self, labels: tuple[str, str], k: int) -> None:
        self.steps.labels(*labels, str(k)).inc()

    def record_cells(self, cells: Iterable[tuple[tuple[str, str], CellCounts]]) -> None:
        for (bs, ctx), c in cells:
            self.drafts.labels(bs, ctx).inc(c.drafts)
            self.draft_tokens.labels(bs, ctx).inc(c.draft_tokens)
            self.accepted_tokens.labels(bs, ctx).inc(c.accepted_tokens)
            self.context_tokens.labels(bs, ctx).inc(c.context_tokens)
            for p, (tested, accepted) in enumerate(zip(c.tested, c.accepted)):
                self.tested.labels(bs, ctx, str(p)).inc(tested)
                self.accepted.labels(bs, ctx, str(p)).inc(accepted)


def prom_counters() -> PromCounters | None:
    """The process's counters, or None when prometheus_client is not installed."""
    try:
        return PromCounters()
    except ImportError:
        return None
