"""The trust region of the adaptive policy's step cost model: per (batch x context) cell, how deep
K may go before what the cell paid confirms the model.

Step cost grows faster than linearly in K on this CPU — 170 / 280 / 370 / 650 ms for K = 0..3 at
B = 16 x ctx 512, and at B = 4 x ctx 512 inside a profile's box a K = 3 step measured 330-430 ms
where the profile's linear fit said ~300 — which the policy's linear cost model cannot foresee.
So a cell's K rises one above the deepest K that measurably paid there (`TrustRegion`). Regions
open at a cell's first step (`TrustRegions.open`); inside the cost prior's box a new region starts
from an adjacent cell's verified depth (a request crossing a context bucket edge, a batch
shrinking by one), outside it from zero. No torch here.
"""

from __future__ import annotations

from collections.abc import Callable

from specsched.policy.adaptive_config import Cell
from specsched.policy.adaptive_guard import COOLDOWN, MAX_BACKOFF
from specsched.policy.batch import StepOutcome

TRUST_MARGIN = 0.1  # a deeper K that measured this much below the shallower one did not pay
JUDGE_STEPS = 3  # steps at a depth before its loss is believed (unless the loss is clear)
CLEAR_LOSS = 0.8  # one step this far below the shallower depth is a loss at once
JUDGE_DECAY = 0.8  # weight of a depth's older steps per new one


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


class TrustRegions:
    """The regions of every cell seen. `trust_inside_box`: cells inside the cost prior's box get
    none (the model is trusted there: the rule before 2026-12-01 night, kept for A/B runs)."""

    def __init__(self, trust_inside_box: bool) -> None:
        self.trust_inside_box = trust_inside_box
        self._cells: dict[Cell, TrustRegion] = {}

    def __contains__(self, cell: Cell) -> bool:
        return cell in self._cells

    def open(self, cell: Cell, inside: bool) -> bool:
        """A cell's first step (`inside`: within the cost prior's box); returns whether a
        region was opened."""
        if cell in self._cells or (inside and self.trust_inside_box):
            return False
        trust = self._cells[cell] = TrustRegion()
        if inside:  # the depth a neighbour verified holds here too, until this cell says not
            trust.verified = max((t.verified for c, t in self._cells.items()
                                  if abs(c[0] - cell[0]) + abs(c[1] - cell[1]) == 1), default=0)
        return True

    def cap(self, cell: Cell, steps: int, max_k: int) -> int:
        """The deepest K the cell may draft at its `steps`-th step (max_k without a region)."""
        trust = self._cells.get(cell)
        return max_k if trust is None else min(max_k, trust.cap(steps))

    def observe(self, cell: Cell, outcome: StepOutcome, seconds: float,
                shallower_seconds: Callable[[list[int]], float], steps: int) -> None:
        """A measured step of `cell` that drafted: did its deepest K pay against one draft less?
        The counterfactual's tokens are exact (a request that accepted a drafts would have
        accepted min(a, k - 1)); its time is `shallower_seconds` of the K per request."""
        trust = self._cells.get(cell)
        drafted = [r.num_spec_tokens for r in outcome.requests]
        if trust is None or not drafted or max(drafted) == 0:
            return
        k = max(drafted)
        tokens = sum(r.num_accepted_tokens + 1 for r in outcome.requests)
        cf_tokens = sum(min(r.num_accepted_tokens, k - 1) + 1 for r in outcome.requests)
        cf_seconds = shallower_seconds([min(d, k - 1) for d in drafted])
        trust.timed(k, tokens, seconds, cf_tokens, cf_seconds, steps)
