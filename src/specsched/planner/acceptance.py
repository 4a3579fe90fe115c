"""Acceptance per draft position -> expected tokens per verify step.

Conventions (Leviathan et al., arXiv:2211.17192; Chen et al., arXiv:2302.01318):
- `a[i]` (i = 0..K-1) is the *conditional* acceptance of draft position i+1 given that positions
  1..i were accepted. A step that drafts K tokens emits 1 + (number of accepted drafts) tokens: the
  accepted prefix plus one recovered or bonus token from the target.
- E[tokens/step | K] = 1 + sum_{k=1..K} prod_{i<=k} a_i; with a constant a: (1 - a^{K+1}) / (1 - a).
- vLLM reports *prefix* rates r_k = P(first k drafts all accepted) (`num_accepted_tokens_per_pos`
  over `num_drafts`); a_k = r_k / r_{k-1}.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specsched.errors import UserError


def check_acceptance(a: Sequence[float], where: str) -> tuple[float, ...]:
    """Validate per-position conditional acceptance: a non-empty list of numbers in [0, 1]."""
    if isinstance(a, (str, bytes)) or not isinstance(a, Sequence) or len(a) == 0:
        raise UserError(f"{where}: expected a non-empty list of acceptance rates in [0, 1]")
    out: list[float] = []
    for i, value in enumerate(a):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UserError(f"{where}[{i}]: acceptance must be a number in [0, 1], got {value!r}")
        if not 0.0 <= float(value) <= 1.0:
            raise UserError(f"{where}[{i}]: acceptance must be in [0, 1], got {value}")
        out.append(float(value))
    return tuple(out)


def expected_tokens(a: Sequence[float], k: int) -> float:
    """1 + sum_{j=1..k} prod_{i<=j} a_i for conditional per-position acceptance `a` (len >= k)."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if k > len(a):
        raise ValueError(f"acceptance has {len(a)} positions, K={k} needs {k}")
    prefix = np.cumprod(np.asarray(a[:k], dtype=np.float64))  # [k]: r_1..r_k
    return float(1.0 + prefix.sum())


def expected_tokens_constant(a: float, k: int) -> float:
    """(1 - a^{K+1}) / (1 - a): expected tokens per step, the same acceptance at every position."""
    if not 0.0 <= a <= 1.0:
        raise ValueError(f"acceptance must be in [0, 1], got {a}")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if a == 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


def conditional_from_prefix_rates(rates: Sequence[float]) -> tuple[float, ...]:
    """Prefix rates r_k = P(first k accepted) -> conditional a_k = r_k / r_{k-1} (r_0 = 1).

    Rates are clipped into [0, 1] and made non-increasing (sampling noise can break both)."""
    out: list[float] = []
    prev = 1.0
    for r in rates:
        cur = min(max(float(r), 0.0), prev)
        out.append(cur / prev if prev > 0.0 else 0.0)
        prev = cur
    return tuple(out)


def constant_acceptance_for_length(mean_tokens: float, k: int) -> float:
    """The constant a with (1 - a^{K+1}) / (1 - a) == mean_tokens (bisection), for sources that
    report only the mean acceptance length (e.g. vLLM's `spec_decode_acceptance_length`)."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if not 1.0 <= mean_tokens <= k + 1:
        raise UserError(f"acceptance length {mean_tokens} is outside [1, {k + 1}] for K={k}")
    lo, hi = 0.0, 1.0
    for _ in range(60):  # expected_tokens_constant is increasing in a
        mid = (lo + hi) / 2
        if expected_tokens_constant(mid, k) < mean_tokens:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def goodput(batch_size: int, tokens_per_step: float, step_time_ms: float) -> float:
    """Goodput in tokens/s: B x E[tokens/step] / T(B, ctx, K). K=0 is plain decode (E = 1)."""
    if step_time_ms <= 0:
        raise ValueError(f"step time must be > 0 ms, got {step_time_ms}")
    return batch_size * tokens_per_step * 1000.0 / step_time_ms
