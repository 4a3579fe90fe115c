"""Helpers for the planner tests: small hand-written profiles."""

from __future__ import annotations

from collections.abc import Callable

from specsched.planner import (
    AcceptancePoint,
    Profile,
    ProfileGrid,
    ProfileMetadata,
    Stat,
    TimingPoint,
)

TimeFn = Callable[[int, int, int], float]


def table_profile(
    batch_sizes: tuple[int, ...],
    contexts: tuple[int, ...],
    ks: tuple[int, ...],
    t_ms: TimeFn,
    a: float | tuple[float, ...] = 0.5,
) -> Profile:
    """A complete profile with T(B, ctx, K) = t_ms(B, ctx, K) and constant acceptance `a`."""
    grid = ProfileGrid(batch_sizes, contexts, ks)
    timings = tuple(
        TimingPoint(b, c, k, Stat(t_ms(b, c, k), 0.0, 1))
        for c in contexts
        for b in batch_sizes
        for k in ks
    )
    acc = a if isinstance(a, tuple) else (a,) * max(ks)
    acceptance = tuple(AcceptancePoint(c, acc, 100) for c in contexts) if max(ks) else ()
    return Profile(ProfileMetadata(model="toy"), grid, timings, acceptance)
