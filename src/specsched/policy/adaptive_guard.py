"""Per-cell bookkeeping of the adaptive policy: exploration period with back-off, the guard
that turns speculation off where it measurably loses, and the trust region of the cost model
(how deep a cell may draft before what it paid there confirms the model).

The guard compares, within one (batch x context) cell, steps that drafted with steps that did not,
each as r = measured goodput / the cost model's predicted no-spec goodput for that step's batch
(so batches of different sizes and contexts compare). When the mean r of drafting steps is below
the no-spec steps' by more than `z` standard errors of the difference (Welch), the cell drafts
nothing for `COOLDOWN` of its steps, then starts a fresh comparison: a model that is wrong about
a cell cannot keep it losing, and a cell whose text changed gets another chance.
No torch here.
"""

from __future__ import annotations

import math
from collections import deque

WINDOW = 32  # recent steps per population
MIN_SPEC, MIN_NOSPEC = 6, 3
MAX_BACKOFF = 4
COOLDOWN = 48  # steps of the cell without drafting after the guard trips
EARLY_PROBE = 6  # a cell outside the cost prior's box is first probed after this many steps
TRUST_MARGIN = 0.1  # a deeper K that measured this much below the shallower one did not pay
JUDGE_STEPS = 3  # steps at a depth before its loss is believed (unless the loss is clear)
CLEAR_LOSS = 0.8  # one step this far below the shallower depth is a loss at once
JUDGE_DECAY = 0.8  # weight of a depth's older steps per new one


def _mean_var(xs: deque[float]) -> tuple[float, float]:
    n = len(xs)
    mean = sum(xs) / n
    var = sum((x - mean) ** 2 for x in xs) / (n - 1) if n > 1 else 0.0
    return mean, var


class CellState:
    """One cell: step count, exploration period, and the guard's two samples."""

    __slots__ = ("backoff", "early_probe", "guarded_until", "nospec", "spec", "steps",
                 "steps_since_probe", "trips")

    def __init__(self) -> None:
        self.steps = 0
        self.steps_since_probe = 0
        self.backoff = 1
        self.guarded_until = 0
        self.trips = 0  # how many times the guard turned drafting off here
        self.early_probe = False  # probe K = 1 soon if the cell does not draft (no profile here)
        self.spec: deque[float] = deque(maxlen=WINDOW)
        self.nospec: deque[float] = deque(maxlen=WINDOW)

    @property
    def guarded(self) -> bool:
        return self.steps < self.guarded_until

    def due(self, every: int) -> bool:
        """Whether this step of the cell is an exploration step."""
        return self.steps_since_probe + 1 >= every * self.backoff

    def early_probe_due(self, after: int, drafting: bool) -> bool:
        """An early K = 1 probe is pending, the cell has run `after` steps and drafts nothing
        (a cell that drafts has no use for it: the flag is dropped)."""
        if not self.early_probe or (not drafting and self.steps < after):
            return False
        self.early_probe = False
        return not drafting

    def probed(self, confirmed: bool) -> None:
        """A probe ran; `confirmed`: it agreed with the cell's choice (back off), else reset."""
        self.steps_since_probe = 0
        self.backoff = min(self.backoff * 2, MAX_BACKOFF) if confirmed else 1

    def mean(self, drafted: bool) -> float | None:
        xs = self.spec if drafted else self.nospec
        return sum(xs) / len(xs) if xs else None

    def record(self, drafted: bool, ratio: float, z: float) -> None:
        """One measured step of the cell; trip the guard when drafting measurably loses."""
        if not math.isfinite(ratio):
            return
        (self.spec if drafted else self.nospec).append(ratio)
        if self.guarded or len(self.spec) < MIN_SPEC or len(self.nospec) < MIN_NOSPEC:
            return
        ms, vs = _mean_var(self.spec)
        mn, vn = _mean_var(self.nospec)
        se = math.sqrt(vs / len(self.spec) + vn / len(self.nospec))
        if ms + z * se < mn:
            self.guarded_until = self.steps + COOLDOWN
            self.trips += 1
            self.spec.clear()  # judge drafting afresh after the cooldown

    def advance(self) -> None:
        self.steps += 1
        self.steps_since_probe += 1


class _DepthEvidence:
    """Sums over the recent steps drafted at one depth: measured tokens and seconds, and the
    tokens and model seconds of the same steps one draft shallower (the counterfactual)."""

    __slots__ = ("cf_seconds", "cf_tokens", "num_steps", "seconds", "tokens")

    def __init__(self) -> None:
        self.tokens = self.seconds = self.cf_tokens = self.cf_seconds = 0.0
        self.num_steps = 0

    def add(self, tokens: float, seconds: float, cf_tokens: float, cf_seconds: float) -> None:
        d = JUDGE_DECAY  # older steps of this depth count less (the text or the batch moved)
        self.tokens = self.tokens * d + tokens
        self.seconds = self.seconds * d + seconds
        self.cf_tokens = self.cf_tokens * d + cf_tokens
        self.cf_seconds = self.cf_seconds * d + cf_seconds
        self.num_steps += 1

    @property
    def ratio(self) -> float:
        """Measured goodput over the shallower depth's (1: no evidence)."""
        if self.seconds <= 0 or self.cf_tokens <= 0 or self.cf_seconds <= 0:
            return 1.0
        return (self.tokens / self.seconds) / (self.cf_tokens / self.cf_seconds)


class TrustRegion:
    """How deep a cell's step cost model may be trusted: K may rise one above the deepest K that
    has paid there.

    Depth k >= 2 paid when the goodput of the cell's recent steps drafted k deep is at least
    (1 - TRUST_MARGIN) x what depth k - 1 would have given on the same steps: the tokens of that
    counterfactual are exact (a request that accepted a of its drafts would have accepted
    min(a, k - 1) of k - 1), its time is the model's for the shallower step (trusted: inside the
    region). The first step that pays verifies k; a loss is believed after JUDGE_STEPS steps at
    k, or at once when one step measured below CLEAR_LOSS (the extra draft token is worth at most
    one token per request, so such a step lost by more than acceptance noise explains). A depth
    that did not pay caps the cell below k for COOLDOWN of its steps (doubling with each repeat,
    up to MAX_BACKOFF x; K = 1 stays allowed: the guard judges drafting at all), after which a
    model that learned from those steps may try k again.
    """

    __slots__ = ("_evidence", "ceiling", "cooldown", "until", "verified")

    def __init__(self) -> None:
        self.verified = 0  # deepest K that paid
        self.ceiling = 0  # K above which the cell may not draft while steps < until
        self.until = 0
        self.cooldown = COOLDOWN
        self._evidence: dict[int, _DepthEvidence] = {}

    def cap(self, steps: int) -> int:
        cap = self.verified + 1
        return min(cap, max(self.ceiling, 1)) if steps < self.until else cap

    def timed(self, k: int, tokens: float, seconds: float, cf_tokens: float, cf_seconds: float,
              steps: int) -> None:
        """A step drafting k deep gave `tokens` in `seconds`; depth k - 1 would have given
        `cf_tokens` in `cf_seconds` (the model's). K = 1 is not judged here (the guard weighs
        drafting against not drafting with measured steps of both; a cell held at K >= 1 has
        timed no K = 0 step, and the model's K = 0 time there is the extrapolation itself)."""
        if k < 2:
            self.verified = max(self.verified, k)
            return
        ev = self._evidence.setdefault(k, _DepthEvidence())
        ev.add(tokens, seconds, cf_tokens, cf_seconds)
        ratio = ev.ratio
        if ratio >= 1.0 - TRUST_MARGIN:
            self.verified = max(self.verified, k)
        elif ev.num_steps >= JUDGE_STEPS or ratio < CLEAR_LOSS:
            self.ceiling, self.until = k - 1, steps + self.cooldown
            self.cooldown = min(self.cooldown * 2, COOLDOWN * MAX_BACKOFF)
            self.verified = min(self.verified, k - 1)
            for deeper in [d for d in self._evidence if d >= k]:
                del self._evidence[deeper]  # judged afresh after the cooldown
