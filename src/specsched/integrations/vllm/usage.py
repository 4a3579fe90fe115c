"""Counting the K the scheduler class chose, so a user can see the schedule acting.

One `KUsage` lives on each scheduler instance (no module state). `record` is O(1) per step;
`summary` is the line logged every `log_every` steps and at shutdown; `to_json` is the
machine-readable form (also what the e2e test reads through the trace file).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TextIO

from specsched.policy.route import RouteDecision


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


def trace_record(step: int, decision: RouteDecision, k: int) -> str:
    """One JSON line: the step counter, the router's decision and the K sent to vLLM."""
    return json.dumps({"step": step, **decision.to_json(), "k_scheduled": k})


def open_trace(path: str) -> TextIO:
    """Append-mode, line-buffered: each step's line is on disk when the step is scheduled."""
    return open(path, "a", buffering=1, encoding="utf-8")
