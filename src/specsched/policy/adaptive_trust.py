"""The trust region of the adaptive policy's step cost model: per (batch x context) cell, how deep
K may go before what the cell paid confirms the model.

Step cost grows faster than linearly in K on this CPU — 170 / 280 / 370 / 650 ms for K = 0..3 at
B = 16 x ctx 512, and at B = 4 x ctx 512 inside a profile's box a K = 3 step measured 330-430 ms
where the profile's linear fit said ~300 — which the policy's linear cost model cannot foresee.
So a cell's K rises one above the deepest K whose steps cost what the model said there
(`TrustRegion`). Regions open at a cell's first step (`adaptive_trust_regions`) at the deepest
of: the depth an adjacent cell verified in this run (a request crossing a context bucket edge,
a batch shrinking by one) and, inside the cost prior's box, the depth the profile itself
verified near the cell (`verified_depth` of its profiled steps against the fit: a fresh cell of
a profiled workload does not climb K = 1, 2, 3, ... one step at a time — the cold start that
cost the adaptive arm 0.85-0.95x the best static K in the K <= 5 grid of 2026-12-02). No torch here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from specsched.policy.adaptive_guard import MAX_BACKOFF

TRUST_MARGIN = 0.1  # a depth whose steps took over 1 / 0.9 of the model's time is not trusted
JUDGE_STEPS = 3  # steps at a depth before an overrun is believed (unless it is clear)
CLEAR_LOSS = 0.8  # one step over 1 / 0.8 = 1.25x the model's time: a hint (`TrustRegion.timed`)
TRUST_COOLDOWN = 12  # cell steps a depth stays capped the first time (doubling per repeat)
JUDGE_DECAY = 0.8  # weight of a depth's older steps per new one
# a capped depth re-judged against newer K = 1 steps is lifted when it now reads at least the
# model's time: hysteresis over the 1 - TRUST_MARGIN that capped it, so +-5 % step noise does
# not lift a real overrun (of 0.85-0.9) to be paid for again
LIFT_RATIO = 1.0

Predict = Callable[[np.ndarray], float]  # the step cost model: features [F] -> seconds


def verified_depth(steps: Sequence[tuple[int, float, float]]) -> int:
    """The deepest K of one profiled (B, context) point whose step cost what the model said —
    `steps` are (K, measured seconds, model seconds) — by the rule a run's steps are judged by
    (`TrustRegion.timed`: at most 1 / (1 - TRUST_MARGIN) of the model's time; K <= 1 is not
    judged). A shallower step over the margin does not stop it: a profile's medians move by
    +-10-30 % between runs on this VM (K = 2 139.5 ms and K = 3 139.8 ms at B=1 x ctx 512 in
    the 0a53925 demo's profile), and step cost rises with K, so a deeper step the model got
    right covers the shallower ones. 0 when the point has no drafting step."""
    return max((k for k, seconds, model_seconds in steps
                if k >= 1 and (k == 1 or model_seconds >= (1.0 - TRUST_MARGIN) * seconds)),
               default=0)


class _DepthEvidence:
    """Decayed sums over the recent steps drafted at one depth: measured seconds and the cost
    model's seconds for the same steps (predicted before the model learned from them)."""

    __slots__ = ("model_seconds", "num_steps", "seconds")

    def __init__(self) -> None:
        self.seconds = self.model_seconds = 0.0
        self.num_steps = 0

    def add(self, seconds: float, model_seconds: float) -> None:
        d = JUDGE_DECAY  # older steps of this depth count less (the text or the batch moved)
        self.seconds = self.seconds * d + seconds
        self.model_seconds = self.model_seconds * d + model_seconds
        self.num_steps += 1

    @property
    def ratio(self) -> float:
        """The model's time over the measured time (1: no evidence; below 1: dearer than
        predicted)."""
        if self.seconds <= 0 or self.model_seconds <= 0:
            return 1.0
        return self.model_seconds / self.seconds


class TrustRegion:
    """How deep a cell's step cost model may be trusted: K may rise one above the deepest K
    whose steps cost what the model predicted there.

    Depth k >= 2 is verified when the cell's recent steps drafted k deep took at most 1 /
    (1 - TRUST_MARGIN) of the model's time for them. The region judges COST only: whether the
    deeper draft is worth its acceptance is the optimizer's question (per-position acceptance
    with counts and priors), and a few steps' realized tokens cannot answer it — at a draft
    costing ~0.3 of a step, one step whose drafts were all rejected gives T(k-1)/T(k) ~ 0.75 of
    the shallower depth's goodput whatever the costs, and the earlier goodput-based rule capped
    a well-accepted text at K=1 for 48 steps on it (the demo of 2026-12-02, long-ctx4096-B1).
    A cost overrun is believed after JUDGE_STEPS steps at k, or after two steps that each took
    more than 1 / CLEAR_LOSS of the prediction (the first one caps briefly: a hint, below). A
    single step on this VM varies by +-15-25 %, so a cap can be wrong: it lasts TRUST_COOLDOWN
    = 12 cell steps the first time (48 before 2026-12-02, when one K=2 step at 228 ms, its
    neighbours 168-195, capped a text that then accepted 100 % for the rest of its 40-token
    request). A depth that did not pay caps the cell below k
    for TRUST_COOLDOWN of its steps (doubling with each repeat, up to MAX_BACKOFF x; K = 1 stays
    allowed: the guard judges drafting at all), after which a model that learned from those
    steps may try k again. A depth above the last ceiling that then pays resets the back-off:
    in a long-lived policy (a server; the grid's warm arm) one-step false caps on a noisy VM
    otherwise add up to 48-step cooldowns that hold a well-accepting cell at K = 1. A depth that
    overruns right below a depth just capped, by about as much, lifts that cap instead of adding
    its own (`_slowed`): the machine slowed, and the cell is judged at its new speed.
    One step over 1 / CLEAR_LOSS of the model's time is a hint, not yet evidence: it caps the
    cell below k for JUDGE_STEPS cell steps and keeps the verified depth and the step, so the
    depth's next overrun is believed (a full cap); a second hint before any depth at or above
    the hinted one pays is a full cap too. On this VM a single step now and then runs 1.3-1.6x
    its neighbours (static K = 2 on the demo's text, 150 steps: 43-52 ms, two at 56-59): in the
    clean-clone demo of 2026-12-03 (B=1 x ctx 512, replicate 4) a K = 2 step at 69 ms, the
    cell's K = 2 steps otherwise 43-52, capped a cell accepting every draft
    at K = 1 for 12 steps and left it climbing K = 2, 3, 4, 5 after (0.80x the 2-D arm).
    A depth is judged relative to the cell's K = 1 steps (the model's time over the measured
    time at k, divided by the same at K = 1, when the cell has K = 1 steps): the question is
    whether the EXTRA cost of drafting deeper is what the model says. On this VM the whole step
    drifts by 15-30 % between minutes; a machine 30 % slower than when it was profiled made every
    step look like an overrun, and a cell that opened at the profile's depth 4 capped K = 3 and
    then K = 2 on their first steps and ran K = 1 for 24 steps (the K <= 5 grid of 2026-12-02,
    B=4 x ctx 4096, replicate 3: K = 1 took 295 ms where the model said ~220).
    Both sides of that ratio come from ONE model (`Predict`, the caller's: the profile's fit
    where there is one, fixed, else the online model): the cell's K = 1 steps are kept as
    decayed sums of their features and measured seconds and re-predicted when a deeper step is
    judged (the model is linear in the features). Until 2026-12-02 the K = 1 side was the
    online model's time when those steps ran: on a machine twice as fast as its profile (an
    AVX-512 EPYC under a Xeon's profile) the first K = 1 step was judged against the untrained
    prior (119 ms said, 53 ms measured), the model then learned the machine, and every deeper
    step looked 2x dearer than that stale reference: the cell capped K = 4, 3, 2 in turn while
    accepting every draft and ran K = 1 for 40 steps.
    """

    __slots__ = (
        "_before_cap",
        "_cap_ratio",
        "_cap_raw",
        "_evidence",
        "_hinted",
        "_rebase",
        "_ref_seconds",
        "_ref_x",
        "ceiling",
        "cooldown",
        "last_timed",
        "until",
        "verified",
    )

    def __init__(self) -> None:
        self.verified = 0  # deepest K that paid
        self.ceiling = 0  # K above which the cell may not draft while steps < until
        self.until = 0
        self.cooldown = TRUST_COOLDOWN
        self._evidence: dict[int, _DepthEvidence] = {}
        # the cell's K = 1 steps: decayed sums of measured seconds and of their features
        self._ref_seconds = 0.0
        self._ref_x: np.ndarray | None = None  # [F]
        self._rebase = 1.0  # the machine's speed without K = 1 steps (see `_slowed`)
        # the last cap: the judged ratio of the capped depth and the state before it
        self._cap_ratio = 0.0
        self._cap_raw = 0.0  # the capped depth's model time over measured time, speed-free
        self._before_cap: tuple[int, int, int, int, bool] = (0, 0, 0, TRUST_COOLDOWN, False)
        self._hinted = False  # a one-step overrun capped the cell briefly, none paid since
        self.last_timed = -1  # when it last judged a step (`TrustRegions`' step count)

    def cap(self, steps: int) -> int:
        cap = self.verified + 1
        return min(cap, max(self.ceiling, 1)) if steps < self.until else cap

    def start_at_speed(self, speed: float) -> None:
        """A fresh region judges at a speed a neighbour measured until its own K = 1 steps
        say otherwise (`adaptive_trust_regions.TrustRegions.open`)."""
        self._rebase = speed

    def speed(self, predict: Predict) -> float:
        """The machine's speed as this cell knows it: the model's time for its recent K = 1
        steps over their measured time, else what it adopted or started at (1: nothing known,
        depths are then judged on absolute time)."""
        if self._ref_x is None or self._ref_seconds <= 0:
            return self._rebase
        return predict(self._ref_x) / self._ref_seconds

    def _slowed(self, k: int, ratio: float, steps: int) -> bool:
        """Depth k overran just after depth k + 1 was capped, and by about as much (within the
        trust margin): the machine slowed, not depth k + 1. A step's cost rises with K, so an
        overrun of the model's extra cost per draft grows with depth; a slow minute on this VM
        (+30-50 %) makes every depth overrun alike. Judged one depth at a time it capped
        K = 5, 4, 3, 2 on one step each and doubled the cooldown at each, so the cell ran K = 1
        for the rest of the run (the clean-clone demo of 2026-12-02, B=1 x ctx 512: K = 1 on 25
        of 38 steps while 93 % of the first drafts were accepted)."""
        return (steps < self.until and self.ceiling == k
                and ratio <= self._cap_ratio / (1.0 - TRUST_MARGIN))

    def _adopt_speed(self, ratio: float) -> None:
        """The machine now runs at `ratio` of the speed the cell's K = 1 steps said: they are
        rescaled (or, without them, the absolute reference), so later depths are judged at
        today's speed until new K = 1 steps say otherwise."""
        if self._ref_x is None or self._ref_seconds <= 0:
            self._rebase *= ratio
        else:
            self._ref_seconds /= ratio

    def _rejudged(self, predict: Predict, steps: int) -> bool:
        """A depth capped while the cell had no (or an older) K = 1 speed reference costs what
        the model says against the K = 1 steps measured since: the machine had slowed, the
        depth had not overrun. On this VM a step's time drifts 15-40 % within a minute: at
        B=4 x ctx 512 (the demo's text, 2026-12-03) three K = 2 steps at 76-91 ms were judged
        against the profile alone (the cell's only K = 1 step was a first draft), capped, and
        the K = 1 steps that followed ran 82-86 ms where the first had run 58: K = 2 had cost
        what the model said at the machine's new speed."""
        return (steps < self.until and self._cap_raw > 0
                and self._cap_raw / self.speed(predict) >= LIFT_RATIO)

    def _lift(self) -> None:
        """Undo the last cap: the state before it returns (its cooldown included)."""
        (self.verified, self.ceiling, self.until, self.cooldown,
         self._hinted) = self._before_cap
        self._cap_raw = 0.0

    def timed(self, k: int, seconds: float, x: np.ndarray, predict: Predict, steps: int,
              may_cap: bool = True) -> None:
        """A step drafting k deep took `seconds`; x [F] its features, `predict` the cost model
        as it was before this step (seconds for features; linear). K = 1 is not judged here
        (the guard weighs drafting against not drafting with measured steps of both).
        `may_cap` False: a step known to be dearer for another reason (a request's first
        draft) counts only if it verifies depth k on its own."""
        if not may_cap and k >= 2 and predict(x) / self.speed(predict) < (
                1.0 - TRUST_MARGIN) * seconds:
            return
        if k < 2:
            self.verified = max(self.verified, k)
            if k == 1 and may_cap:  # (a first draft's K = 1 step is no speed reference)
                d = JUDGE_DECAY
                self._ref_seconds = self._ref_seconds * d + seconds
                self._ref_x = x.copy() if self._ref_x is None else self._ref_x * d + x
                if self._rejudged(predict, steps):
                    self._lift()
            return
        ev = self._evidence.setdefault(k, _DepthEvidence())
        speed = self.speed(predict)
        model_seconds = predict(x) / speed  # the model's time at K = 1's speed
        step_ratio = model_seconds / seconds
        # one step moves the evidence by at most a clear loss: a hiccup among steps that paid
        # does not outweigh them (a 1.6x step after three as predicted read 0.79 and capped)
        ev.add(min(seconds, model_seconds / CLEAR_LOSS), model_seconds)
        ratio = ev.ratio
        judged = min(ratio, step_ratio)  # how far over: the evidence, or this step alone
        if ratio >= 1.0 - TRUST_MARGIN:
            self.verified = max(self.verified, k)
            if k > self.ceiling:  # the depth once capped paid after all: the back-off resets
                self.cooldown = TRUST_COOLDOWN
                self._hinted = False
        elif self._slowed(k, judged, steps):  # not an overrun of depth k + 1: lift its cap
            self._adopt_speed(judged)
            self._lift()
            for deeper in [d for d in self._evidence if d >= k]:
                del self._evidence[deeper]  # judged afresh at the new speed
        elif ev.num_steps >= JUDGE_STEPS or step_ratio < CLEAR_LOSS:
            self._cap_ratio = judged
            self._cap_raw = judged * speed
            self._before_cap = (self.verified, self.ceiling, self.until, self.cooldown,
                                self._hinted)
            if step_ratio < CLEAR_LOSS and not self._hinted:  # one clear step: a hint
                self._hinted = True
                self.ceiling, self.until = k - 1, steps + JUDGE_STEPS
                return  # its evidence stays: the depth's next overrun is believed
            self.ceiling, self.until = k - 1, steps + self.cooldown
            self.cooldown = min(self.cooldown * 2, TRUST_COOLDOWN * MAX_BACKOFF)
            self.verified = min(self.verified, k - 1)
            for deeper in [d for d in self._evidence if d >= k]:
                del self._evidence[deeper]  # judged afresh after the cooldown
