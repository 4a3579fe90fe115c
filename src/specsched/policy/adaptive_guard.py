"""Per-cell bookkeeping of the adaptive policy: exploration (period with back-off, early probes
outside the cost prior's box) and the guard that turns speculation off where it measurably loses
(how deep a cell may draft: `adaptive_trust`).

The guard compares, within one (batch x context) cell, steps that drafted with steps that did not,
each as r = measured goodput / the cost model's predicted no-spec goodput for that step's batch
(so batches of different sizes and contexts compare). Each sample keeps its goodput per row and
its no-spec features, and r is computed with the model of the moment for both populations: one
yardstick, even while the model moves fast (a cell outside the box its prior was fitted on; an
r frozen at record time mixed a prior's 405 ms no-spec step with the learned 340 ms one, and the
no-spec population's spread hid a clear loss). When the mean log r of drafting steps is below
the no-spec steps' by more than `z` standard errors of the difference (Welch; each step's time
clipped where its log residual against the model's prediction for that step lies beyond its
population's median +- 3 robust scales, so one stalled step decides nothing, while its tokens
count as they came), the cell
drafts nothing for `COOLDOWN` of its steps (doubling with each trip, up to 4x), then starts a
fresh comparison: a model that is wrong about a cell cannot keep it losing, and a cell whose text
changed gets another chance (outside the cost prior's box, from K <= 1 with K = 0 probes, as when
it opened).

A cell first visited next to a cell whose guard tripped on its own evidence (the same context
bucket, an adjacent batch bucket) starts guarded too (`inherit_guard`): a refilled batch passes
through smaller batch buckets while chunked prefill admits its new requests a few per step, and
those cells, never judged, drafted on the prior's word at 2.3-4x a K = 0 step (B=16 x ctx 512 on
the AVX2 EPYC, 2026-12-04). An inherited verdict is not passed on (no chains across the grid).
A cell outside the cost prior's box drafts at most K = 1 until its guard has judged
(`unjudged`), and a K = 1 probe of a cell at K = 0 drafts for a quarter of its requests
(`probe_rows`): enough for the cost model to see what a draft costs there, at a quarter of the
price where drafting loses.
No torch here; numpy only.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Collection, Hashable

import numpy as np

WINDOW = 32  # recent steps per population
MIN_SPEC, MIN_NOSPEC = 3, 3
# ... and the drafting population's request-steps (a step's decoding rows, summed) before it
# judges: at B = 1 a drafting step's tokens are a few integers of one text, three of them say
# little. Grid 44 (AVX-512 EPYC, 2026-12-07), B1 x ctx 4096 replicate 11: released when the
# request it had judged left, the guard tripped again on the next request's first three
# drafting steps (2, 1, 1 tokens at K = 2; the draft matched 26 of that text's next 27 tokens)
# and its doubled cooldown held the rest of the trial at K = 0: 0.70x static K4, below
# no-spec (trace_sim_text.py replays it: 0.97x no-spec; 1.26x with this). At B >= 3 three steps
# hold enough.
MIN_SPEC_ROWS = 8
MAX_BACKOFF = 4
COOLDOWN = 48  # steps of the cell without drafting after the guard first trips
EARLY_PROBE = 6  # a cell outside the box at K = 0: its K = 1 probe after this many steps
EARLY_NOSPEC_MAX = 6  # ... that drafts: K = 0 probes every other step until judged, at most this
EARLY_GAIN = 1.5  # ... unless drafting is predicted to gain this much (an error it could not hide)
STEP_NOISE = 0.05  # the least spread (log) the guard assumes a population's steps have
ROBUST_Z = 3.0  # ... and clips a step's log time residual at this many robust scales
PROBE_SHARE = 4  # a K = 1 probe drafts for ceil(n / PROBE_SHARE) of a cell's n decoding requests

# (tokens per decoding row, step seconds, no-spec features [F], the step's features [F])
Sample = tuple[float, float, np.ndarray, np.ndarray]


def _robust_logs(logs: np.ndarray) -> np.ndarray:  # [n] -> [n]
    """logs, each clipped to their median +- ROBUST_Z robust scales (1.4826 MAD, at least
    STEP_NOISE): one step that ran 2.5x slow for reasons of its own (the VM, a page fault)
    cannot make a population's mean or spread. On the AVX2 EPYC (2026-12-04, B=16 x ctx 512)
    one replicate's cold arm drafted K = 1-2 on 34 of 45 steps, 0.817x no-spec, where the
    others tripped within 3; the simulator reproduces it with one slow K = 0 step among the
    guard's first no-spec samples (0.845x; 0.94x with this clipping)."""
    med = float(np.median(logs))
    scale = max(1.4826 * float(np.median(np.abs(logs - med))), STEP_NOISE)
    return np.clip(logs, med - ROBUST_Z * scale, med + ROBUST_Z * scale)


def ratio(sample: Sample, theta: np.ndarray) -> float:
    """r of one sample under the cost model theta: tokens per row x predicted no-spec time /
    time (1 for a no-spec step the model predicts exactly)."""
    return sample[0] * max(float(sample[2] @ theta), 1e-6) / max(sample[1], 1e-9)


def _ratios(samples: deque[Sample], theta: np.ndarray) -> np.ndarray:  # [n]
    """r of each sample under the cost model theta, with the step's time clipped where it
    strays from the model's prediction for that step (`_robust_logs` of the log residuals;
    the population's median residual, a systematic error of the model, is kept), its tokens
    as they came. Clipping r itself (before 2026-12-05) cut tokens too: at B = 1 a step's
    tokens are a few integers (K = 1: 1 or 2), their median absolute deviation is 0, and every
    accepted draft was cut down to the rejected steps' level. The phases bench (requests
    alternating text the draft accepts at 0.38 and 0.91, B = 1) then read K = 1 (1.08x
    no-spec in tokens per second) as a loss, and the guard held the next free-text request at
    K = 0 for 48-192 steps (simulator, notes/scripts/phases_sim.py: 0.988x the best static K;
    1.034x without the guard)."""
    n = len(samples)
    tokens = np.fromiter((s[0] for s in samples), dtype=np.float64, count=n)
    seconds = np.maximum(np.fromiter((s[1] for s in samples), dtype=np.float64, count=n), 1e-9)
    t0 = np.maximum(np.stack([s[2] for s in samples]) @ theta, 1e-6)  # [n]
    pred = np.maximum(np.stack([s[3] for s in samples]) @ theta, 1e-6)  # [n]
    resid = _robust_logs(np.log(seconds / pred))  # [n]
    return tokens * t0 / (pred * np.exp(resid))


class CellState:
    """One cell: step count, exploration period, and the guard's two samples."""

    __slots__ = ("backoff", "early_probe", "extrapolated", "guarded_until", "judged", "nospec",
                 "rejudge", "spec", "spec_ahead", "steps", "steps_since_probe", "trips",
                 "verdict_on")
    # trips: how many times the guard turned drafting off here on the cell's own evidence (an
    # inherited verdict does not count: it is not passed on)

    def __init__(self) -> None:
        self.steps = 0
        self.steps_since_probe = 0
        self.backoff = 1
        self.guarded_until = 0
        self.trips = 0
        self.early_probe = False  # outside the cost prior's box: probe soon (see early_probe_due)
        # outside the box: after each cooldown the cell is judged again as when it opened (K <= 1,
        # K = 0 probes) - the cost model that drafted at a loss there is still the same model
        self.extrapolated = False
        self.rejudge = False
        self.spec_ahead = False  # at the last judgment drafting measured at least no-spec's r
        self.spec: deque[Sample] = deque(maxlen=WINDOW)
        self.nospec: deque[Sample] = deque(maxlen=WINDOW)
        # the decoding requests of each drafting sample, and those of the last tripped verdict
        # (`release`)
        self.judged: deque[tuple[Hashable, ...]] = deque(maxlen=WINDOW)
        self.verdict_on: frozenset[Hashable] = frozenset()

    @property
    def guarded(self) -> bool:
        return self.steps < self.guarded_until

    def inherit_guard(self, neighbours: list[CellState]) -> None:
        """At a cell's first step: start guarded for a cooldown when an adjacent cell (same
        context bucket, adjacent batch bucket) is guarded on its own evidence."""
        if self.steps == 0 and any(n.guarded and n.trips for n in neighbours):
            self.guarded_until = COOLDOWN

    def release(self, requests: Collection[Hashable], max_judged: int) -> None:
        """End a cooldown whose verdict was passed on at most `max_judged` requests once none of
        them is decoding in the cell: at B = 1 a cell is a sequence of requests, and the loss of
        one text (a request the draft cannot follow) said nothing of the next. The phases bench
        (B = 1 x ctx 4096, 2026-12-06, AVX-512 EPYC): a quoting request tripped the guard and its
        48-step cooldown held the next, free, request at K = 0 for 31 of its ~37 steps while its
        probes accepted every draft. Where more requests were judged, the loss is the cell's
        step cost as much as their texts, and the cooldown runs out."""
        if (self.guarded and self.verdict_on and len(self.verdict_on) <= max_judged
                and self.verdict_on.isdisjoint(requests)):
            self.guarded_until = self.steps
            self.verdict_on = frozenset()

    def unjudged(self, gain: float) -> bool:
        """Outside the cost prior's box, drafting on a predicted gain below EARLY_GAIN, and the
        guard has not judged yet (`early_probe_due` still measuring K = 0): K stays <= 1."""
        return self.early_probe and not self.guarded and gain < EARLY_GAIN

    def due(self, every: int, patient: bool = False) -> bool:
        """Whether this step of the cell is an exploration step (patient: at the longest
        period, as if backed off fully)."""
        return self.steps_since_probe + 1 >= every * (MAX_BACKOFF if patient else self.backoff)

    def early_probe_due(self, drafting: bool, gain: float) -> bool:
        """Whether this step is an early probe of a cell outside the cost prior's box (its
        extrapolated costs may be far off). At K = 0: one K = 1 probe after EARLY_PROBE steps.
        Drafting, while the predicted gain over K = 0 is below EARLY_GAIN: a K = 0 probe every
        other step until the guard has judged (tripped, or drafting measured ahead with
        MIN_NOSPEC no-spec steps), at most EARLY_NOSPEC_MAX. K >= 1 steps alone cannot tell what
        K = 0 costs: B=16 x ctx 512 on the AVX2 EPYC (2026-12-04) drafted K = 1 at 2.3x a K = 0
        step (the prior, fitted on B <= 4, said 1.54x: a gain of 1.27x predicted) for 27 of 33
        steps, 0.86x no-spec, its first K = 0 reference an exploration probe at step 28. Where
        the predicted gain is large (a long context), an extrapolation error that large would
        not turn it into a loss, while each K = 0 step there forgoes most of a step's tokens."""
        if not self.early_probe:
            return False
        if self.guarded:  # judged: drafting lost here
            self.early_probe = False
            return False
        if drafting:
            n = len(self.nospec)
            if (self.spec_ahead and n >= MIN_NOSPEC) or n >= EARLY_NOSPEC_MAX:
                self.early_probe = False
                return False
            return gain < EARLY_GAIN and (self.steps == 0 or self.steps_since_probe >= 1)
        if self.steps < EARLY_PROBE:
            return False
        self.early_probe = False
        return True

    def probed(self, confirmed: bool) -> None:
        """A probe ran; `confirmed`: it agreed with the cell's choice (back off), else reset."""
        self.steps_since_probe = 0
        self.backoff = min(self.backoff * 2, MAX_BACKOFF) if confirmed else 1

    def mean(self, drafted: bool, theta: np.ndarray) -> float | None:
        xs = self.spec if drafted else self.nospec
        return float(_ratios(xs, theta).mean()) if xs else None

    def record(self, drafted: bool, sample: Sample, theta: np.ndarray, z: float,
               requests: Collection[Hashable] = ()) -> None:
        """One measured step of the cell (`requests`: its decoding requests); trip the guard
        when drafting measurably loses."""
        if not (math.isfinite(sample[0]) and math.isfinite(sample[1]) and sample[1] > 0):
            return
        (self.spec if drafted else self.nospec).append(sample)
        if drafted:
            self.judged.append(tuple(requests))
        if (self.guarded or len(self.spec) < MIN_SPEC or len(self.nospec) < MIN_NOSPEC
                or sum(max(len(rs), 1) for rs in self.judged) < MIN_SPEC_ROWS):
            return
        rs = np.log(np.maximum(_ratios(self.spec, theta), 1e-12))
        rn = np.log(np.maximum(_ratios(self.nospec, theta), 1e-12))
        ms, mn = float(rs.mean()), float(rn.mean())
        self.spec_ahead = ms >= mn
        se = math.sqrt(rs.var(ddof=1) / len(rs) + rn.var(ddof=1) / len(rn))
        if ms + z * se < mn:
            # a cell that keeps losing is judged again ever less often: 1, 2, 4x COOLDOWN
            self.guarded_until = self.steps + COOLDOWN * (1 << min(self.trips, 2))
            self.trips += 1
            self.verdict_on = frozenset(r for rs in self.judged for r in rs)
            self.judged.clear()
            self.spec.clear()  # judge drafting afresh after the cooldown
            self.rejudge = self.extrapolated  # ... from K <= 1, with K = 0 probes again

    def advance(self) -> None:
        self.steps += 1
        if self.rejudge and self.steps == self.guarded_until:
            self.early_probe, self.rejudge = True, False
        self.steps_since_probe += 1


def probe_rows(caps: np.ndarray, share: int = PROBE_SHARE) -> np.ndarray:  # [n] K per request
    """A K = 1 probe: K = 1 for the first ceil(n / share) requests that may draft, 0 for the rest
    (share 1: all; one K per step, as vLLM drafts)."""
    ks = np.minimum(1, caps)
    allowed = np.flatnonzero(ks)  # [m] the requests with room to draft
    num_probing = -(-len(ks) // share)  # ceil(n / share)
    ks[allowed[num_probing:]] = 0
    return ks


def explore(state: CellState, ks: np.ndarray, caps: np.ndarray, every: int, budget_ok: bool,
            gain: float, share: int = PROBE_SHARE, patient: bool = False, hold: bool = False
            ) -> tuple[np.ndarray, bool]:  # ([n] K per request, was it a probe)
    """The cell's guard and exploration on the chosen K: a guarded cell drafts nothing; an
    unjudged cell outside the box drafts at most K = 1; an early probe (outside the box, not
    counted against the budget: a few per cell) or a periodic one within the budget tries K = 1
    for a few requests (`probe_rows`) where the cell drafts nothing and K = 0 (the guard's
    no-spec reference) where it drafts. gain: the choice's predicted goodput over K = 0's;
    share: see `probe_rows`; patient: periodic probes at the longest period (a cell where
    drafting could not pay even if every draft were accepted: a probe can teach it little);
    hold: a periodic K = 1 probe waits, staying due (the batch decodes in lockstep:
    `AdaptiveConfig.probe_lockstep`); K = 0 probes and early ones run."""
    if state.guarded:
        ks = np.zeros_like(ks)
    early = state.early_probe_due(drafting=bool(ks.any()), gain=gain)
    if state.unjudged(gain):
        ks = np.minimum(ks, 1)
    if not (early or (budget_ok and state.due(every, patient))):
        return ks, False
    if ks.any():
        return np.zeros_like(ks), True
    if hold and not early:
        return ks, False
    return probe_rows(caps, share), True
