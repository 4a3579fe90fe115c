"""Counting the K the scheduler class chose, so a user can see the schedule acting.

One `KUsage` lives on each scheduler instance (no module state). `record` is O(1) per step;
`summary` is the line logged every `log_every` steps and at shutdown; `to_json` is the
machine-readable form (also what the e2e test reads through the trace file).

The JSON-lines trace has three kinds of record:
- `{"kind": "schedule", "entries", "max_k", "ctx_agg"}` when the engine starts;
- `{"kind": "decision", "step", "batch_size", "pool", "ctx_repr", "bucket", "k", "k_scheduled"}`
  for every K decision;
- `{"kind": "outcome", "step", "batch_size", "bucket", "k", "step_time_s", "decoding",
  "prefill_tokens", "prefill_contexts", "requests": [[ctx, drafts, accepted], ...]}` when a step
  verified the drafts that decision `step` sized (`outcomes.py`): one triple per request that
  verified >= 1 draft, its context taken at schedule time; `decoding` counts every decoding
  request of the step, `prefill_tokens` the prompt tokens of prefill chunks in it and
  `prefill_contexts` the context each chunk's last token attends over (the rows the policy's
  step cost model sees for them);
- `{"kind": "learned", "step", "observed", "max_k", "entries"}` (adaptive policy only, every
  `log_every` steps and at shutdown): the schedule it learned, frozen (`adaptive.py`).
`specsched profile --from-vllm-trace` reads the outcome records.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TextIO

from specsched.integrations.vllm.outcomes import FinishedStep
from specsched.policy.route import RouteDecision
from specsched.schedule import Schedule


@dataclass(slots=True)
class KUsage:
    """Steps per K and per grid cell, plus how often the decode-only pool was empty."""

    steps: int = 0
    by_k: Counter[int] = field(default_factory=Counter)
    by_bucket: Counter[tuple[int, int, int, int]] = field(default_factory=Counter)
    all_pool_steps: int = 0  # steps where no scheduled request was decoding yet

    def record(self, decision: RouteDecision, k: int) -> None:
        self.steps += 1
        self.by_k[k] += 1
        self.by_bucket[tuple(decision.bucket)] += 1  # type: ignore[index]
        if decision.pool.value == "all":
            self.all_pool_steps += 1

    def summary(self) -> str:
        ks = ", ".join(f"K={k}: {n}" for k, n in sorted(self.by_k.items())) or "none"
        return f"specsched K usage over {self.steps} steps: {ks}"

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "by_k": {str(k): n for k, n in sorted(self.by_k.items())},
            "by_bucket": [[*b, n] for b, n in sorted(self.by_bucket.items())],
            "all_pool_steps": self.all_pool_steps,
        }


def schedule_record(schedule: Schedule, ctx_agg: str) -> str:
    """One JSON line naming the (clamped) schedule the engine runs: its ranges bin the outcomes."""
    return json.dumps({"kind": "schedule", "entries": schedule.entries(), "max_k": schedule.max_k,
                       "ctx_agg": ctx_agg})


def trace_record(step: int, decision: RouteDecision, k: int) -> str:
    """One JSON line: the step counter, the router's decision and the K sent to vLLM."""
    return json.dumps({"kind": "decision", "step": step, **decision.to_json(), "k_scheduled": k})


def outcome_record(done: FinishedStep) -> str:
    """One JSON line: what verification did with the drafts decision `step` sized."""
    route, outcome = done.decided.route, done.outcome
    time_s = None if outcome.step_time_s is None else round(outcome.step_time_s, 6)
    return json.dumps({
        "kind": "outcome",
        "step": done.decided.step,
        "batch_size": route.batch_size,
        "bucket": list(route.bucket),
        "k": done.decided.k,
        "step_time_s": time_s,
        "decoding": done.num_decoding,
        "prefill_tokens": outcome.num_prefill_tokens,
        "prefill_contexts": list(outcome.prefill_contexts),
        "requests": [[r.num_computed_tokens, r.num_spec_tokens, r.num_accepted_tokens]
                     for r in outcome.requests if r.num_spec_tokens > 0],
    })


def open_trace(path: str) -> TextIO:
    """Append-mode, line-buffered: each step's line is on disk when the step is scheduled."""
    return open(path, "a", buffering=1, encoding="utf-8")
