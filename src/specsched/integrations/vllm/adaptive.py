"""The adaptive (closed-loop) K policy inside vLLM's scheduler class (no vLLM import).

`"policy": "adaptive"` in `additional_config["specsched"]` runs `specsched.policy.AdaptivePolicy`
with the schedule as its prior (the K new requests start from), one K per step (vLLM's model
runner drafts one K for every request: `per_request_k` true is refused). Its settings come from
`"adaptive": {"profile": "profile.json", "max_k": 4, <any other AdaptiveConfig field>}`, read
and checked by `adaptive_settings` (`parse_adaptive`, `engine_adaptive`). Here, what runs:
- `StepKRoute`: the adaptive decision's route names the prior's K; this wrapper puts the chosen
  K there, so `HysteresisPolicy` (which wraps it when both are configured) holds the K actually
  chosen;
- `AdaptiveRun`: pairs each outcome with the decision that sized its drafts (vLLM verifies step
  N's K in step N+1, after `decide` of N+1; see `before_observe`) and freezes what was learned
  (`policy.freeze_schedule`) into a schedule an operator can deploy statically: logged every
  `log_every` steps and at shutdown, written to `<trace>.learned.json` when a trace is set.
Determinism: `AdaptivePolicy` has no randomness, so every rank that sees the same outcomes
chooses the same K (vLLM runs one scheduler for TP/PP; DP > 1 is refused).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from specsched.errors import UserError
from specsched.io import atomic_write_json
from specsched.policy import (
    AdaptivePolicy,
    BatchState,
    KDecision,
    KPolicy,
    StepOutcome,
    freeze_schedule,
)
from specsched.policy.adaptive import Pending
from specsched.policy.adaptive_config import CTX_BUCKETS
from specsched.schedule import Schedule

MAX_SNAPSHOTS = 64  # decisions kept for pairing with their outcomes
LEARNED_SUFFIX = ".learned.json"


class StepKRoute:
    """A `KPolicy` around one whose batch-mode route names another K than the step's (the
    adaptive policy routes through its prior): the route carries the step's K."""

    def __init__(self, inner: KPolicy) -> None:
        self.inner = inner

    @property
    def max_k(self) -> int:
        return self.inner.max_k

    def decide(self, batch: BatchState) -> KDecision:
        d = self.inner.decide(batch)
        if d.route is None or d.route.k == d.step_k:
            return d
        return KDecision(d.num_spec_tokens, d.step_k, dataclasses.replace(d.route, k=d.step_k))

    def observe(self, outcome: StepOutcome) -> None:
        self.inner.observe(outcome)


def learned_path(trace: str | None) -> str | None:
    return None if trace is None else trace + LEARNED_SUFFIX


def grid_text(schedule: Schedule) -> str:
    """The frozen grid on one line: K per context bucket, one group per batch bucket."""
    rows = " | ".join(f"bs>={lo}: {' '.join(map(str, row))}"
                      for (lo, _), row in zip(schedule.batch_ranges, schedule.effective_grid))
    return f"K by context from {', '.join(map(str, CTX_BUCKETS))}: {rows}"


class AdaptiveRun:
    """The adaptive policy of one scheduler: decision/outcome pairing and the learned schedule.

    Pairing: `AdaptivePolicy.observe` credits its guard and exploration bookkeeping to the last
    `decide` (its engine verifies in the same step). In vLLM the drafts sized at step N are
    verified in step N+1, whose `update_from_output` runs after `decide` of N+1 (N+2 under async
    scheduling), so the policy's pending decision is restored to the one that sized the outcome,
    with the K actually sent (hysteresis may hold another)."""

    def __init__(self, policy: AdaptivePolicy, ctx_agg: str, trace: str | None) -> None:
        self.policy = policy
        self.ctx_agg = ctx_agg
        self.path = learned_path(trace)
        self.observed = 0
        self._snapshots: dict[int, Pending | None] = {}
        self._pairs = hasattr(policy, "_pending")  # the policy's private slot (see module doc)

    def on_decide(self, step: int) -> None:
        if self._pairs:
            self._snapshots[step] = self.policy._pending
            while len(self._snapshots) > MAX_SNAPSHOTS:
                del self._snapshots[next(iter(self._snapshots))]

    def before_observe(self, step: int, k: int) -> None:
        """The outcome about to be observed verified the drafts decision `step` sized (K `k`)."""
        self.observed += 1
        if self._pairs:
            pending = self._snapshots.pop(step, None)
            if pending is not None:
                pending = pending._replace(drafted=k > 0)
            self.policy._pending = pending

    def learned(self) -> Schedule:
        return freeze_schedule(self.policy)

    def report(self, steps: int) -> tuple[str, dict[str, Any]]:
        """(the log line, the trace record); writes the learned schedule file when a trace is
        set (a failed write is reported in the line, never raised: this runs at shutdown)."""
        schedule = self.learned()
        entries = schedule.entries(5)
        where = ""
        if self.path is not None:
            try:
                atomic_write_json(self.path, {"speculative_token_schedule": entries,
                                              "ctx_agg": self.ctx_agg})
                where = (f"; written to {self.path} (deploy statically: `specsched export "
                         f"{self.path} --to vllm`)")
            except (UserError, OSError) as exc:
                where = f"; could not write {self.path}: {exc}"
        line = (f"specsched adaptive: learned over {steps} steps ({self.observed} outcomes, "
                f"max_k={self.policy.max_k}): {grid_text(schedule)}{where}")
        record = {"kind": "learned", "step": steps, "observed": self.observed,
                  "max_k": self.policy.max_k, "entries": entries}
        return line, record

