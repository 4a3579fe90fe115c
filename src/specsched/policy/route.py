"""Routing: apply a schedule to one step's batch (the lookup half of `static.SchedulePolicy`).

1. Pool: requests in decode (`num_computed_tokens >= num_prompt_tokens`); if none, all requests.
2. Context representative over the pool's `num_computed_tokens`: `mean` (floor of the mean; the
   default: mean x B = sum of contexts, which tracks the verify step's KV bytes), `median` (the mean
   of the two middle values for even counts, floored, as `statistics.median`), or `max`.
3. K = schedule.lookup(batch size = number of scheduled requests, representative).
Per-request mode: each request's own context picks its K from the row of the batch size.
No torch here. Only the policies of this package call these (and `Schedule.lookup` / `k_row`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from specsched.schedule.model import Bucket, Schedule


class CtxAgg(str, Enum):
    MEAN = "mean"
    MEDIAN = "median"
    MAX = "max"


class PoolKind(str, Enum):
    DECODE = "decode"  # only requests past their prompt
    ALL = "all"  # fallback: nobody is decoding yet


@dataclass(frozen=True, slots=True)
class RouteDecision:
    batch_size: int
    pool: PoolKind
    ctx_repr: int
    bucket: Bucket
    k: int

    def to_json(self) -> dict[str, object]:
        return {
            "batch_size": self.batch_size,
            "pool": self.pool.value,
            "ctx_repr": self.ctx_repr,
            "bucket": list(self.bucket),
            "k": self.k,
        }


def context_representative(values: Sequence[int], agg: CtxAgg | str = CtxAgg.MEAN) -> int:
    """Floor of mean, floor of median (mean of the middle two), or max of non-empty `values`."""
    n = len(values)
    if n == 0:
        raise ValueError("context_representative needs at least one value")
    agg = CtxAgg(agg)
    if agg is CtxAgg.MEAN:
        return sum(values) // n
    if agg is CtxAgg.MAX:
        return max(values)
    ordered = sorted(values)
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) // 2


def decode_pool(
    num_computed_tokens: Sequence[int], num_prompt_tokens: Sequence[int] | None
) -> tuple[PoolKind, Sequence[int]]:
    """Contexts of the decoding requests, or of all requests when none is decoding."""
    if num_prompt_tokens is None:
        return PoolKind.DECODE, num_computed_tokens
    if len(num_prompt_tokens) != len(num_computed_tokens):
        raise ValueError(
            f"got {len(num_computed_tokens)} num_computed_tokens but "
            f"{len(num_prompt_tokens)} num_prompt_tokens"
        )
    pool = [c for c, p in zip(num_computed_tokens, num_prompt_tokens) if c >= p]
    if pool:
        return PoolKind.DECODE, pool
    return PoolKind.ALL, num_computed_tokens


def route(
    schedule: Schedule,
    num_computed_tokens: Sequence[int],
    num_prompt_tokens: Sequence[int] | None = None,
    agg: CtxAgg | str = CtxAgg.MEAN,
) -> RouteDecision:
    """K for one step. `num_prompt_tokens=None` counts every request as decoding."""
    batch_size = len(num_computed_tokens)
    if batch_size == 0:
        raise ValueError("route needs at least one scheduled request")
    pool_kind, pool = decode_pool(num_computed_tokens, num_prompt_tokens)
    ctx = context_representative(pool, agg)
    k, bucket = schedule.lookup(batch_size, ctx)
    return RouteDecision(batch_size, pool_kind, ctx, bucket, k)


def route_per_request(schedule: Schedule, num_computed_tokens: Sequence[int]) -> list[int]:
    """K per request: each request's own context in the row of the step's batch size."""
    batch_size = len(num_computed_tokens)
    if batch_size == 0:
        raise ValueError("route_per_request needs at least one scheduled request")
    row = schedule.k_row(batch_size)
    col_for = schedule.col_for
    return [row[col_for(c)] for c in num_computed_tokens]

