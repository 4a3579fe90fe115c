"""What a backend is: something that runs one trial of (arm, scenario) and measures it.

The runner owns order, warm-ups, persistence and progress; a backend only runs what it is given.
Backends may keep state between trials (a started server, a loaded model) and release it in
`close()`; the runner calls `close()` once, also after errors and interrupts.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Protocol

from specsched.bench.experiment import Arm, Scenario
from specsched.corpus import RequestShape


class TrialFailed(Exception):
    """A trial whose measurement cannot be trusted (e.g. a server reply that is malformed or claims
    impossible token counts). The message is the reason, one line. The runner records the trial as
    failed (reason, no metrics) and goes on; analysis counts failed trials and never uses them."""


@dataclass(frozen=True, slots=True)
class TrialSpec:
    """Everything a backend needs for one trial. `seed` varies prompt text and sampling."""

    arm: Arm
    scenario: Scenario
    shapes: tuple[RequestShape, ...]  # the same for every arm and replicate of the scenario
    replicate: int
    position: int
    warmup: bool
    seed: int


@dataclass(frozen=True, slots=True)
class RequestResult:
    """One request. Times in seconds from the request's submission; `submit_s`: when it was
    submitted, in seconds from the trial's start (requests of a serving trial start when a slot
    frees, so their own clocks differ)."""

    num_prompt_tokens: int  # as the backend counted them (a server's usage when it reports one)
    num_output_tokens: int
    ttft_s: float
    latency_s: float
    itl_s: tuple[float, ...] = ()  # gaps between streamed chunks after the first
    submit_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        itl = self.itl_s
        return {
            "num_prompt_tokens": self.num_prompt_tokens,
            "num_output_tokens": self.num_output_tokens,
            "ttft_s": self.ttft_s,
            "latency_s": self.latency_s,
            "submit_s": self.submit_s,
            "itl_s_median": statistics.median(itl) if itl else None,
            "itl_s_mean": statistics.fmean(itl) if itl else None,
        }


@dataclass(frozen=True, slots=True)
class TrialResult:
    """A measured trial. `wall_s`: first submission to last token of the trial."""

    requests: tuple[RequestResult, ...]
    wall_s: float
    k_histogram: dict[int, int] | None = None  # K chosen per step, when the backend knows
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def num_output_tokens(self) -> int:
        return sum(r.num_output_tokens for r in self.requests)

    @property
    def output_tok_s(self) -> float:
        """End to end: every output token over the trial's wall time (prefill included)."""
        return self.num_output_tokens / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def decode_tok_s(self) -> float:
        """Decode only: tokens after each request's first, from the first token of the trial to
        its last, on the trial's clock (time to first token left out)."""
        if not self.requests:
            return 0.0
        span = (max(r.submit_s + r.latency_s for r in self.requests)
                - min(r.submit_s + r.ttft_s for r in self.requests))
        tokens = sum(max(0, r.num_output_tokens - 1) for r in self.requests)
        return tokens / span if span > 0 else 0.0

    def metrics(self) -> dict[str, Any]:
        """Flat numbers for the results file; `specsched report` reads these names."""
        ttft = [r.ttft_s for r in self.requests]
        itl = [x for r in self.requests for x in r.itl_s]
        return {
            "num_requests": len(self.requests),
            "num_output_tokens": self.num_output_tokens,
            "num_prompt_tokens": sum(r.num_prompt_tokens for r in self.requests),
            "wall_s": self.wall_s,
            "output_tok_s": self.output_tok_s,
            "decode_tok_s": self.decode_tok_s,
            "ttft_s_median": statistics.median(ttft) if ttft else None,
            "ttft_s_max": max(ttft) if ttft else None,
            "itl_s_median": statistics.median(itl) if itl else None,
            "itl_s_mean": statistics.fmean(itl) if itl else None,
        }


class Backend(Protocol):
    """Runs trials. Implementations: openai (servers), simulated (tests); engine plugs in here."""

    def run_trial(self, trial: TrialSpec) -> TrialResult: ...

    def close(self) -> None: ...
