"""What a K policy sees and what it says: one step's batch in, K per request out; outcomes back.

vLLM's vocabulary: a request has `num_prompt_tokens` and `num_computed_tokens` (tokens whose
K/V are in the cache); it decodes once `num_computed_tokens >= num_prompt_tokens`. `room` is the
most draft tokens the request can still verify (its K + 1 outputs must fit `max_model_len` and
`max_tokens`); None where the caller caps K itself (vLLM).
No torch here.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from specsched.policy.route import RouteDecision


@dataclass(frozen=True, slots=True)
class BatchState:
    """Every request scheduled this step (prefill chunks included), in schedule order; one
    column per field, B entries each (columns, not objects: a 256-request vLLM step builds it).

    room[i]: the most drafts request i can still verify; None (the column) where the caller caps
        K itself (vLLM). request_ids[i]: a key a closed-loop policy tracks request i by; None:
        the positions 0..B-1.
    """

    num_computed_tokens: tuple[int, ...]  # [B]
    num_prompt_tokens: tuple[int, ...]  # [B]
    room: tuple[int, ...] | None = None  # [B]
    request_ids: tuple[Hashable, ...] | None = None  # [B]

    def __post_init__(self) -> None:
        n = len(self.num_computed_tokens)
        if n == 0:
            raise ValueError("a batch needs at least one scheduled request")
        for name in ("num_prompt_tokens", "room", "request_ids"):
            col = getattr(self, name)
            if col is not None and len(col) != n:
                raise ValueError(f"got {n} num_computed_tokens but {len(col)} {name}")

    def __len__(self) -> int:
        return len(self.num_computed_tokens)

    def is_decoding(self, i: int) -> bool:
        return self.num_computed_tokens[i] >= self.num_prompt_tokens[i]

    @property
    def ids(self) -> tuple[Hashable, ...]:
        return self.request_ids if self.request_ids is not None else tuple(range(len(self)))

    @classmethod
    def from_counts(
        cls,
        num_computed_tokens: Sequence[int],
        num_prompt_tokens: Sequence[int] | None = None,
        room: Sequence[int] | None = None,
        request_ids: Sequence[Hashable] | None = None,
    ) -> BatchState:
        """A batch from lists; `num_prompt_tokens=None` counts every request as decoding."""
        computed = tuple(num_computed_tokens)
        prompts = (0,) * len(computed) if num_prompt_tokens is None else tuple(num_prompt_tokens)
        return cls(computed, prompts, None if room is None else tuple(room),
                   None if request_ids is None else tuple(request_ids))


@dataclass(frozen=True, slots=True)
class KDecision:
    """K for one step.

    num_spec_tokens[i]: drafts request i gets this step, after the caps (0 while prefilling).
    step_k: the step's one K (vLLM's `num_spec_tokens_to_schedule`): the routed K in batch mode,
        the largest uncapped K of a decoding request in per-request mode.
    route: how a batch-mode K was found (pool, representative, bucket); None otherwise.
    """

    num_spec_tokens: tuple[int, ...]  # [B]
    step_k: int
    route: RouteDecision | None = None


@dataclass(frozen=True, slots=True)
class RequestOutcome:
    """What verification did with one decoding request's drafts."""

    request_id: Hashable
    num_computed_tokens: int  # before the step: the context its drafts were made at
    num_spec_tokens: int  # drafts verified (<= its K: a drafter may propose fewer)
    num_accepted_tokens: int  # of those, accepted (0 <= accepted <= num_spec_tokens)


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """One finished step, as the engine (or vLLM's `update_from_output`) observed it."""

    batch_size: int  # scheduled requests, prefill chunks included (the K decision's batch size)
    requests: tuple[RequestOutcome, ...]  # the decoding requests
    step_time_s: float | None = None  # wall time of the step; None where it is not measured
    step_k: int = 0  # the decision's step K
    num_prefill_tokens: int = 0  # prompt tokens of prefill chunks in the same step
    # [chunks] what each prefill chunk's last token attends over (its context): its row reads
    # the weights and the cached prompt like a decoding row there (measured: `planner.simulate`'s
    # module doc). (): not reported (vLLM), every prefill token then on the prefill term
    prefill_contexts: tuple[int, ...] = ()

    def step_rows(self) -> tuple[list[int], list[int], int]:
        """(context per row [rows], drafts per row [rows], other prefill tokens): the decoding
        requests, then one row (K = 0) per prefill chunk at its context; the chunks' other
        tokens go to the prefill term. What a step cost model's features describe."""
        ctx = [r.num_computed_tokens for r in self.requests] + list(self.prefill_contexts)
        drafted = [r.num_spec_tokens for r in self.requests] + [0] * len(self.prefill_contexts)
        return ctx, drafted, max(0, self.num_prefill_tokens - len(self.prefill_contexts))
