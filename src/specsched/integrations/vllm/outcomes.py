"""Per-request acceptance read back from vLLM, tied to the K decision that sized the drafts.

Timing in vLLM (0.32; notes/vllm_internals_research.md §1): the K chosen at step N is the number
of drafts proposed after step N's forward, which step N+1 verifies. So the drafts verified in a
step belong to the *previous decision in schedule order* — also under async scheduling, where
`schedule(N+1)` runs before `update_from_output(N)`: `AsyncScheduler` sizes step N+1's draft
placeholders from step N's K. Hence, per step:
1. at schedule time (`_update_after_schedule`, before the advance) the scheduler class snapshots,
   for each decoding request, its context (`num_computed_tokens`) and its scheduled drafts, and
   for each prefill chunk its tokens and the context its last token attends over
   (`num_computed_tokens + num_scheduled_tokens - 1`: a row of the step cost model, like the
   engine's recorder), with the previous decision, keyed by `id(scheduler_output)` (a plain
   dataclass: not hashable);
2. `update_from_output` pops that snapshot (`begin`); vLLM reports each request's drafts and
   accepted drafts through `make_spec_decoding_stats` (`on_verified`; vLLM's own guards apply:
   finished, stale or failed requests are not reported);
3. `finish` turns it into a `StepOutcome` for the policy, the counters and the trace.
Under async scheduling `num_computed_tokens` at schedule time includes in-flight placeholders
(off by at most K + 1). No vLLM import here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specsched.policy import RequestOutcome, RouteDecision, StepOutcome

MAX_PENDING = 64  # snapshots kept for steps whose output never came back (aborted engine steps)


@dataclass(frozen=True, slots=True)
class Decided:
    """One K decision of the scheduler class."""

    step: int  # the class's step counter (1-based)
    route: RouteDecision
    k: int  # the K sent to vLLM (`num_spec_tokens_to_schedule`)


@dataclass(frozen=True, slots=True)
class FinishedStep:
    """A verified step: the decision whose drafts it verified, and what happened to them."""

    decided: Decided
    outcome: StepOutcome
    num_decoding: int  # decoding requests scheduled in the step (with or without drafts)


@dataclass(slots=True)
class _Pending:
    decided: Decided | None  # the decision that sized this step's drafts
    contexts: dict[str, tuple[int, int]]  # req_id -> (num_computed_tokens, drafts scheduled)
    prefill_tokens: int = 0  # prompt tokens of prefill chunks scheduled in the step
    prefill_contexts: tuple[int, ...] = ()  # [chunks] each chunk's last token's context
    verified: dict[str, tuple[int, int]] = field(default_factory=dict)  # -> (drafts, accepted)


class OutcomeTracker:
    """Snapshots at schedule time, read back in `update_from_output`; one per scheduler."""

    def __init__(self) -> None:
        self._pending: dict[int, _Pending] = {}
        self._last: Decided | None = None
        self._current: _Pending | None = None
        self._last_update: float | None = None  # perf_counter of the last finished step

    def on_schedule(
        self, key: int, contexts: dict[str, tuple[int, int]], decided: Decided | None,
        num_prefill_tokens: int = 0, prefill_contexts: tuple[int, ...] = (),
    ) -> None:
        """Step scheduled: its decoding requests' (context, drafts), its prefill tokens and
        chunks' contexts (they take part of the step's time) and the new decision."""
        self._pending[key] = _Pending(self._last, contexts, num_prefill_tokens,
                                      prefill_contexts)
        while len(self._pending) > MAX_PENDING:
            del self._pending[next(iter(self._pending))]
        if decided is not None:
            self._last = decided

    def begin(self, key: int) -> None:
        """`update_from_output` of the step scheduled under `key` starts."""
        self._current = self._pending.pop(key, None)

    def on_verified(self, req_id: str, num_draft_tokens: int, num_accepted: int) -> None:
        """vLLM counted one request's verified drafts (grammar-invalid ones already removed)."""
        if self._current is not None:
            drafts = max(num_draft_tokens, 0)
            self._current.verified[req_id] = (drafts, min(max(num_accepted, 0), drafts))

    def finish(self, now: float, idle_after: bool = False) -> FinishedStep | None:
        """The step's outcome (None without a decision to credit). `idle_after`: no request is
        left, so the next interval would include idle time: its step time is not measured."""
        cur, self._current = self._current, None
        prev, self._last_update = self._last_update, None if idle_after else now
        if cur is None or cur.decided is None:
            return None
        requests: list[RequestOutcome] = []
        for rid, (ctx, scheduled) in cur.contexts.items():
            if rid in cur.verified:
                drafts, accepted = cur.verified[rid]
            elif scheduled == 0:
                drafts, accepted = 0, 0
            else:
                continue  # drafts vLLM did not count (finished, stale or failed request)
            requests.append(RequestOutcome(rid, ctx, drafts, accepted))
        step_time = None if prev is None else now - prev
        decided = cur.decided
        outcome = StepOutcome(decided.route.batch_size, tuple(requests), step_time, decided.k,
                              cur.prefill_tokens, cur.prefill_contexts)
        return FinishedStep(decided, outcome, len(cur.contexts))
