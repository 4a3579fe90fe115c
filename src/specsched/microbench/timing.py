"""Interleaved wall-clock timing of many (shape, kernel) cases: warm-up, repeats, median, IQR.

Each repeat runs every case once in a fresh random order, so load from other processes on a
shared machine spreads over all cases instead of biasing whichever ran during a busy stretch.
On CUDA the device is synchronized before and after every call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True, slots=True)
class TimingStats:
    median_ms: float
    q1_ms: float
    q3_ms: float
    min_ms: float
    samples_ms: tuple[float, ...]

    @property
    def iqr_rel(self) -> float:
        """Interquartile range / median: the run's spread for this case."""
        return (self.q3_ms - self.q1_ms) / self.median_ms if self.median_ms > 0 else 0.0


def summarize(samples_ms: Sequence[float]) -> TimingStats:
    a = np.asarray(samples_ms, dtype=float)
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return TimingStats(float(med), float(q1), float(q3), float(a.min()), tuple(float(s) for s in a))


def _sync_for(device: torch.device) -> Callable[[], None]:
    if device.type == "cuda":
        return torch.cuda.synchronize
    return lambda: None


def time_interleaved(
    cases: Sequence[Callable[[], object]],
    *,
    warmup: int,
    repeats: int,
    device: torch.device,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> list[TimingStats]:
    """Time every case `repeats` times after `warmup` untimed calls; one stats per case."""
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0, got {repeats}, {warmup}")
    sync = _sync_for(device)
    for fn in cases:
        for _ in range(warmup):
            fn()
    sync()
    rng = np.random.default_rng(seed)
    samples: list[list[float]] = [[] for _ in cases]
    for r in range(repeats):
        for i in rng.permutation(len(cases)):
            fn = cases[int(i)]
            sync()
            t0 = time.perf_counter_ns()
            fn()
            sync()
            samples[int(i)].append((time.perf_counter_ns() - t0) / 1e6)
        if progress is not None:
            progress(r + 1, repeats)
    return [summarize(s) for s in samples]
