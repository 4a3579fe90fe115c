"""What the adaptive policy knows about acceptance: per request and per (batch x context) cell,
learned from verified steps and shrunk toward the profile's acceptance (`acceptance_stats`).

Per request: decayed counts per draft position over two horizons (a CUSUM on its first position
switches to the short one when the text changed); per cell: decayed counts of its requests. A
request's estimate shrinks toward its context bucket (the cells of that context, every batch
size), and the bucket toward the profile's acceptance at that context. A request or cell that
drafts nothing drifts back toward its target, so K > 0 is tried again. No torch here; numpy only.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence
from itertools import islice

import numpy as np

from specsched.policy.acceptance_stats import (
    AcceptanceCounts,
    TwoHorizon,
    posterior_batch,
    prior_for_context,
    shrinkage_weight,
)
from specsched.policy.adaptive_config import CTX_BUCKETS, AdaptiveConfig, Cell, cell_of
from specsched.policy.batch import StepOutcome

# the requests whose spread sets how much a request borrows from its bucket: the batch's and, at
# least this many in all, the most recently seen others (a batch of 1 has no mates to compare)
RECENT_REQUESTS = 16


class TrackedRequest:
    """One request's acceptance and slow-start state."""

    __slots__ = ("capped", "horizons", "last_k", "num_verifies", "ramped")

    def __init__(self, max_k: int) -> None:
        self.horizons = TwoHorizon(max_k)
        self.last_k: int | None = None
        # last_k was the slow start's cap and its drafts were all accepted: not a choice the
        # hysteresis should hold (`AdaptivePolicy.decide`)
        self.capped = False
        self.num_verifies = 0  # verifies of its own drafts (the slow start's ramp)
        self.ramped = False  # the slow start is over (or was skipped)

    @property
    def counts(self) -> AcceptanceCounts:
        return self.horizons.slow


class AcceptanceBook:
    """Acceptance per request and per cell (see module doc)."""

    def __init__(self, cfg: AdaptiveConfig) -> None:
        self.cfg = cfg
        self.requests: OrderedDict[Hashable, TrackedRequest] = OrderedDict()
        self.cells: dict[Cell, AcceptanceCounts] = {}
        self._bucket_cache: dict[int, tuple[np.ndarray, float]] = {}  # (acceptance, evidence)
        self._ctx_prior = {b: prior_for_context(cfg.acceptance_prior, max(lo, 1) * 3 // 2,
                                                cfg.max_k) for b, lo in enumerate(CTX_BUCKETS)}

    def request(self, rid: Hashable) -> TrackedRequest:
        """The request's state (created on first sight; the least recent is dropped beyond
        `max_tracked_requests`)."""
        req = self.requests.get(rid)
        if req is None:
            req = self.requests[rid] = TrackedRequest(self.cfg.max_k)
            if len(self.requests) > self.cfg.max_tracked_requests:
                self.requests.popitem(last=False)
        else:
            self.requests.move_to_end(rid)
        return req

    def bucket_acceptance(self, ctx_bucket: int) -> np.ndarray:  # [max_k]
        """Acceptance of a context bucket: its counts over every batch bucket, shrunk to the
        profile's acceptance there (cached until the next observation)."""
        cached = self._bucket_cache.get(ctx_bucket)
        if cached is not None:
            return cached[0]
        total = AcceptanceCounts(self.cfg.max_k)
        for (_, cb), counts in self.cells.items():
            if cb == ctx_bucket:
                total.merge(counts)
        post = total.posterior(self._ctx_prior[ctx_bucket], self.cfg.cell_prior_weight)
        self._bucket_cache[ctx_bucket] = (post, float(total.tested[0]))
        return post

    def bucket_evidence(self, ctx_bucket: int) -> float:
        """Decayed verifies at the first position measured in a context bucket (this run's)."""
        self.bucket_acceptance(ctx_bucket)  # merges the bucket's cells once per observation
        return self._bucket_cache[ctx_bucket][1]

    def acceptance_evidence(self, reqs: Sequence[TrackedRequest], ctx: Sequence[int]
                            ) -> tuple[np.ndarray, np.ndarray]:  # [n, max_k] twice
        """Each request's acceptance per position: its counts shrunk toward its bucket's, by a
        weight from how much requests differ: the batch's and the most recently seen others
        (`RECENT_REQUESTS`). On the phases bench (B = 1, requests alternating text that the
        draft accepts at 0.38 and 0.91) the batch alone could not tell: every request borrowed
        the default 4 verifies from a bucket that held the previous request's text, and a
        quoting request drafted K = 4-5 for its first steps and drifted back there when idle.
        Second: the evidence behind each estimate, its decayed verifies plus the
        pseudo-verifies it borrows from its bucket (a binomial SE is sqrt(a (1 - a) / that))."""
        population = islice(reversed(self.requests.values()), max(len(reqs), RECENT_REQUESTS))
        w = shrinkage_weight([r.counts for r in population], self.cfg.request_prior_weight)
        tested = np.stack([r.counts.tested for r in reqs])  # [n, max_k]
        accepted = np.stack([r.counts.accepted for r in reqs])  # [n, max_k]
        prior = np.stack([self.bucket_acceptance(cell_of(1, c)[1]) for c in ctx])  # [n, max_k]
        return posterior_batch(tested, accepted, prior, w), tested + w

    def ramping(self, req: TrackedRequest, ctx: int) -> bool:
        """Whether `req` is still in its slow start: not over, and its context bucket holds
        fewer than `slow_start_evidence` verifies of this run (checked every step: a batch of
        16 has them after its first step)."""
        if not req.ramped:
            req.ramped = (self.cfg.start_k >= self.cfg.max_k or self.bucket_evidence(
                cell_of(1, ctx)[1]) >= self.cfg.slow_start_evidence)
        return not req.ramped

    def slow_start_cap(self, req: TrackedRequest, ctx: int, start: int = 0) -> int:
        """The most `req` may draft now: max(start_k, start) before its first verify, then
        doubling per verify of its own (TCP's slow start: a profile measured on other text can
        be far off; a K = 1 verify tests position 0 as well as a K = 4 one). `start`: the K a
        pessimistic estimate would choose (`AdaptivePolicy._start_ks`). Over as soon as
        `ramping` says so."""
        cfg = self.cfg
        if not self.ramping(req, ctx):
            return cfg.max_k
        cap = max(cfg.start_k, start) << min(req.num_verifies, 8)
        req.ramped = cap >= cfg.max_k
        return cap

    def idle(self, reqs: Sequence[TrackedRequest], ks: Sequence[int], ctx: Sequence[int]
             ) -> None:
        """Requests that draft nothing this step (no evidence) drift back toward their bucket,
        and their cells toward the profile, so K > 0 is tried again."""
        idle_cells: set[Cell] = set()
        for r, k, c in zip(reqs, ks, ctx, strict=True):
            if k == 0:
                r.counts.decay(self.cfg.idle_decay)
                idle_cells.add(cell_of(len(reqs), c))
        for cell in idle_cells:
            counts = self.cells.get(cell)
            if counts is not None:
                counts.decay(self.cfg.idle_decay)
                self._bucket_cache.clear()

    def observe(self, outcome: StepOutcome) -> bool:
        """Learn from a verified step; returns whether a request drafted for its first time (a
        step that runs measurably slower: 1.3-1.6x its mates' next steps at B=4 x ctx 512 on the
        AVX-512 EPYC, 2026-12-02)."""
        cfg = self.cfg
        self._bucket_cache.clear()
        b = len(outcome.requests)
        first_draft = any(r.num_spec_tokens > 0 and (
            r.request_id not in self.requests or self.requests[r.request_id].num_verifies == 0)
            for r in outcome.requests)
        touched: dict[Cell, int] = {}  # cell -> the deepest K drafted there this step
        for r in outcome.requests:
            if r.num_spec_tokens == 0:
                continue
            req = self.request(r.request_id)
            req.num_verifies += 1
            if r.num_accepted_tokens < r.num_spec_tokens:  # the text held it back, not the cap
                req.capped = False
            cell = cell_of(b, r.num_computed_tokens)
            w, c = cfg.request_prior_weight, req.counts  # its first position's estimate
            p0 = float((c.accepted[0] + w * self.bucket_acceptance(cell[1])[0])
                       / (c.tested[0] + w))
            req.horizons.add(r.num_spec_tokens, r.num_accepted_tokens, cfg.request_decay,
                             cfg.fast_decay)
            req.counts.decay_beyond(r.num_spec_tokens, cfg.untested_decay)
            # the text changed (a repetitive phase turned into free text, or back)
            fast = req.horizons.changed(p0, r.num_accepted_tokens > 0, cfg.change_h)
            counts = self.cells.setdefault(cell, AcceptanceCounts(cfg.max_k))
            if cell not in touched:
                counts.decay(cfg.cell_decay)
            touched[cell] = max(touched.get(cell, 0), r.num_spec_tokens)
            if fast:  # the bucket it shrinks toward must not hold the old text's acceptance
                counts.decay(cfg.fast_decay)
            counts.add(r.num_spec_tokens, r.num_accepted_tokens)
        for cell, deepest in touched.items():
            self.cells[cell].decay_beyond(deepest, cfg.untested_decay)
        self._bucket_cache.clear()  # the cells just changed
        return first_draft
