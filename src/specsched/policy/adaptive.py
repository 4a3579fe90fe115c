"""The closed-loop K policy: learn acceptance and step cost online, choose K per request (or per
step) to maximize expected goodput, never stay on a losing choice.

Each step (`decide`):
1. acceptance per decoding request and draft position: its own decayed counts, shrunk toward its
   context bucket's counts, shrunk toward the profile's acceptance at that context
   (`acceptance_stats`); expected tokens E_i(k) for k = 0..max_k;
2. step cost from the online regression (`cost.OnlineStepCost`): T = base + Σ c_i K_i + f max K;
3. K maximizing Σ E_i / T (`optimize`): per request in the engine — a request that accepts poorly
   gets K = 0 while others draft, a shrinking batch gets the K its own size deserves — or one K
   per step (vLLM);
4. hysteresis: the previous K of each request (for a new one: the prior schedule's K) is kept
   unless the new choice is predicted better by more than `margin`;
5. the cell's guard (`adaptive_guard`) forces K = 0 where drafting measurably loses; bounded
   exploration probes K = 1 in cells at K = 0 and K = 0 in cells that draft.
`observe` feeds the verified outcome (drafts, accepted per request, step time) back.
Deterministic: the same observations give the same decisions (no randomness at all).
No torch here; numpy only.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable

import numpy as np

from specsched.policy.acceptance_stats import (
    AcceptanceCounts,
    TwoHorizon,
    expected_tokens_table,
    posterior_batch,
    prior_for_context,
    shrinkage_weight,
)
from specsched.policy.adaptive_config import CTX_BUCKETS, AdaptiveConfig, Cell, cell_of
from specsched.policy.adaptive_guard import CellState, explore
from specsched.policy.adaptive_trust import TrustRegions
from specsched.policy.base import KPolicy
from specsched.policy.batch import BatchState, KDecision, StepOutcome
from specsched.policy.cost import CTX_UNIT, OnlineStepCost, tile_passes
from specsched.policy.optimize import Choice, best_per_request, best_per_step, evaluate, refine


class _Request:
    __slots__ = ("horizons", "last_k", "num_verifies", "ramped")

    def __init__(self, max_k: int) -> None:
        self.horizons = TwoHorizon(max_k)
        self.last_k: int | None = None
        self.num_verifies = 0  # verifies of its own drafts (the slow start's ramp)
        self.ramped = False  # the slow start is over (or was skipped)

    @property
    def counts(self) -> AcceptanceCounts:
        return self.horizons.slow


class AdaptivePolicy:
    """A `KPolicy` that learns (see module doc). `prior`: the open-loop policy whose K anchors
    new requests and decides while the cost model has no profile prior and too few steps."""

    def __init__(self, cfg: AdaptiveConfig, prior: KPolicy, per_request: bool) -> None:
        self.cfg = cfg
        self.prior = prior
        self.per_request = per_request
        self.cost = OnlineStepCost(cfg.cost_prior)
        self.requests: OrderedDict[Hashable, _Request] = OrderedDict()
        self.cells: dict[Cell, AcceptanceCounts] = {}
        self.cell_state: dict[Cell, CellState] = {}
        self.num_steps = 0
        self.num_explored = 0
        self._bucket_cache: dict[int, tuple[np.ndarray, float]] = {}  # (acceptance, evidence)
        self.last_step_k = 0
        self._pending: tuple[Cell, bool, bool] | None = None  # (cell, drafted, probe)
        # the next decoding step is the first after start-up or after steps with no decoding
        # request (a prefill phase): it runs several times slower than its features say
        self._cold_step = True
        # the step cost whose SHAPE in K the trust region checks: the profile's fit where there
        # is one (fixed: how much dearer depth k is than K = 1 moves little between machines,
        # while the online model, pulled from a prior twice the machine's time, cuts its
        # per-draft terms faster than its base for a few dozen steps), else the online model
        self._shape = self.cost.predict if cfg.cost_prior is None else cfg.cost_prior.predict
        self._trust = TrustRegions(  # how deep each cell may draft
            cfg.trust_inside_box, () if cfg.cost_prior is None else cfg.cost_prior.verified_depths)
        self._ctx_prior = {b: prior_for_context(cfg.acceptance_prior, max(lo, 1) * 3 // 2,
                                                cfg.max_k) for b, lo in enumerate(CTX_BUCKETS)}

    @property
    def max_k(self) -> int:
        return self.cfg.max_k

    # -- estimates ------------------------------------------------------------------------------
    def _request(self, rid: Hashable) -> _Request:
        req = self.requests.get(rid)
        if req is None:
            req = self.requests[rid] = _Request(self.cfg.max_k)
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

    def _acceptance(self, reqs: list[_Request], ctx: list[int]) -> np.ndarray:  # [n, max_k]
        w = shrinkage_weight([r.counts for r in reqs], self.cfg.request_prior_weight)
        tested = np.stack([r.counts.tested for r in reqs])  # [n, max_k]
        accepted = np.stack([r.counts.accepted for r in reqs])  # [n, max_k]
        prior = np.stack([self.bucket_acceptance(cell_of(1, c)[1]) for c in ctx])  # [n, max_k]
        return posterior_batch(tested, accepted, prior, w)

    def costs(self, ctx: list[int]) -> tuple[float, np.ndarray, float]:
        """(T at K = 0, seconds each request's k drafts add [n, max_k + 1], seconds per draft
        step), all >= 0: c_i·k with c_i = d + e·ctx_i, plus h·ctx_i per extra attention tile."""
        theta = self.cost.theta
        base = self.cost.predict(self.cost.features(ctx, [0] * len(ctx)))
        c = np.asarray(ctx, dtype=np.float64) / CTX_UNIT  # [n]
        per_draft = np.maximum(theta[3] + theta[4] * c, 1e-7)  # [n]
        karr = np.arange(self.max_k + 1)  # [k]
        extra = tile_passes(karr, self.cost.q_tile)  # [k]
        table = per_draft[:, None] * karr[None, :] + np.maximum(theta[7], 0.0) * np.outer(c, extra)
        return base, table, max(float(theta[5]), 0.0)

    # -- decide ---------------------------------------------------------------------------------
    def decide(self, batch: BatchState) -> KDecision:
        n = len(batch)
        decoding = [i for i in range(n) if batch.is_decoding(i)]
        prior = self.prior.decide(batch)
        if not decoding:
            self._pending = None
            return KDecision((0,) * n, 0, prior.route)
        ids, computed = batch.ids, batch.num_computed_tokens
        reqs = [self._request(ids[i]) for i in decoding]
        ctx = [computed[i] for i in decoding]
        room = batch.room
        caps = np.array([min(self.cfg.max_k, max(0, room[i])) if room is not None
                         else self.cfg.max_k for i in decoding])
        mean_ctx = sum(ctx) // len(decoding)
        cell = cell_of(len(decoding), mean_ctx)
        state = self.cell_state.setdefault(cell, CellState())
        self._check_extrapolation(cell, state, len(decoding), mean_ctx)
        known = sorted(r.last_k for r in reqs if r.last_k is not None)
        # a new request starts from its batch mates' K (the median), or the prior's K
        fresh = [known[len(known) // 2]] * n if known else prior.num_spec_tokens
        anchor = np.array([r.last_k if r.last_k is not None else fresh[i]
                           for r, i in zip(reqs, decoding, strict=True)])
        gain = np.inf  # predicted goodput of the choice / of K = 0 (not known in the warm-up)
        if self.cfg.cost_prior is None and self.cost.num_updates < self.cfg.warmup_steps:
            ks = self._warmup(np.minimum(anchor, caps), caps)
        else:
            caps = np.minimum(caps, [self._slow_start(r, c)
                                      for r, c in zip(reqs, ctx, strict=True)])
            caps = np.minimum(caps, self._trust.cap(cell, state.steps, self.cfg.max_k))
            ks, gain = self._choose(reqs, ctx, caps, np.minimum(anchor, caps))
        budget_ok = self.num_explored < self.cfg.explore_budget * (self.num_steps + 1)
        ks, probe = explore(state, ks, caps, self.cfg.explore_every, budget_ok, gain)
        self.num_explored += probe
        idle_cells: set[Cell] = set()
        for r, k, c in zip(reqs, ks, ctx, strict=True):
            r.last_k = int(k) if not probe else r.last_k
            if k == 0:  # no evidence this step: drift back toward the bucket (and it toward
                r.counts.decay(self.cfg.idle_decay)  # the profile), so K > 0 is tried again
                idle_cells.add(cell_of(len(decoding), c))
        for idle in idle_cells:
            counts = self.cells.get(idle)
            if counts is not None:
                counts.decay(self.cfg.idle_decay)
                self._bucket_cache.clear()
        state.advance()
        self.num_steps += 1
        self._pending = (cell, bool(ks.any()), probe)
        out = [0] * n
        for i, k in zip(decoding, ks, strict=True):
            out[i] = int(k)
        step_k = int(ks.max())
        self.last_step_k = step_k
        return KDecision(tuple(out), step_k, prior.route)

    def _check_extrapolation(self, cell: Cell, state: CellState, batch_size: int,
                             ctx: int) -> None:
        """The first step of a cell opens its trust region (`adaptive_trust`). Outside the cost
        prior's box it also makes the prior's evidence worth `extrapolated_cost_weight` steps
        (process noise) and, if the cell does not draft, brings its first K = 1 probe
        EARLY_PROBE steps later: what the cell measures corrects the extrapolation soon.
        (Without a prior the warm-up varies K around the prior schedule's and every cell learns
        from zero: no box to leave.)"""
        if cell in self._trust:
            return
        prior = self.cfg.cost_prior
        inside = prior is None or prior.covers(batch_size, ctx)
        if self._trust.open(cell, inside) and not inside:
            self.cost.add_uncertainty(self.cfg.extrapolated_cost_weight)
            state.early_probe = True

    def _slow_start(self, req: _Request, ctx: int) -> int:
        """The most a request may draft now: start_k before its first verify, then doubling
        per verify of its own (TCP's slow start: a profile measured on other text can be far
        off; a K = 1 verify tests position 0 as well as a K = 4 one). Over as soon as its
        context bucket holds `slow_start_evidence` verifies of this run (checked every step: a
        batch of 16 has them after its first step)."""
        start = self.cfg.start_k
        if not req.ramped:
            evidence = self.bucket_evidence(cell_of(1, ctx)[1])
            req.ramped = evidence >= self.cfg.slow_start_evidence
        if req.ramped or start >= self.cfg.max_k:
            return self.cfg.max_k
        cap = start << min(req.num_verifies, 8)
        req.ramped = cap >= self.cfg.max_k
        return cap

    def _warmup(self, anchor: np.ndarray, caps: np.ndarray) -> np.ndarray:
        """No cost prior yet: follow the prior, varying K every 4th step so the regression sees
        more than one K."""
        if self.num_steps % 4 == 3:
            shift = 1 if anchor.max() < self.cfg.max_k else -1
            return np.clip(anchor + shift, 0, caps)
        return anchor

    def _choose(self, reqs: list[_Request], ctx: list[int], caps: np.ndarray,
                anchor: np.ndarray) -> tuple[np.ndarray, float]:
        """K per request and its predicted goodput over K = 0's."""
        tokens = expected_tokens_table(self._acceptance(reqs, ctx))
        base, added, per_step = self.costs(ctx)
        if self.per_request:
            best = best_per_request(tokens, base, added, per_step, caps)
        else:
            _k, best = best_per_step(tokens, base, added, per_step, caps)
            anchor = np.minimum(int(anchor.max()), caps)  # one K per step
        kept: Choice = evaluate(tokens, base, added, per_step, anchor)
        if best.goodput > kept.goodput * (1.0 + self.cfg.margin):
            ks = best.ks
        elif not self.per_request:
            ks = anchor
        else:
            ks = refine(tokens, added, kept, best.ks, self.cfg.margin)
        plain = evaluate(tokens, base, added, per_step, np.zeros_like(ks)).goodput
        return ks, evaluate(tokens, base, added, per_step, ks).goodput / max(plain, 1e-12)

    # -- observe --------------------------------------------------------------------------------
    def observe(self, outcome: StepOutcome) -> None:
        pending, self._pending = self._pending, None
        self._bucket_cache.clear()
        if not outcome.requests:
            self._cold_step = True
            return
        cold, self._cold_step = self._cold_step, False
        b = len(outcome.requests)
        ctx = [r.num_computed_tokens for r in outcome.requests]
        drafted = [r.num_spec_tokens for r in outcome.requests]
        # a request's first drafting step runs measurably slower (1.3-1.6x its mates' next
        # steps at B=4 x ctx 512 on the AVX-512 EPYC, 2026-12-02): it may verify a depth but
        # not cap one
        first_draft = any(r.num_spec_tokens > 0 and (
            r.request_id not in self.requests or self.requests[r.request_id].num_verifies == 0)
            for r in outcome.requests)
        touched: dict[Cell, int] = {}  # cell -> the deepest K drafted there this step
        for r in outcome.requests:
            if r.num_spec_tokens == 0:
                continue
            req = self._request(r.request_id)
            req.num_verifies += 1
            cell = cell_of(b, r.num_computed_tokens)
            w, c = self.cfg.request_prior_weight, req.counts  # its first position's estimate
            p0 = float((c.accepted[0] + w * self.bucket_acceptance(cell[1])[0])
                       / (c.tested[0] + w))
            req.horizons.add(r.num_spec_tokens, r.num_accepted_tokens, self.cfg.request_decay,
                             self.cfg.fast_decay)
            req.counts.decay_beyond(r.num_spec_tokens, self.cfg.untested_decay)
            # the text changed (a repetitive phase turned into free text, or back)
            fast = req.horizons.changed(p0, r.num_accepted_tokens > 0, self.cfg.change_h)
            counts = self.cells.setdefault(cell, AcceptanceCounts(self.cfg.max_k))
            if cell not in touched:
                counts.decay(self.cfg.cell_decay)
            touched[cell] = max(touched.get(cell, 0), r.num_spec_tokens)
            if fast:  # the bucket it shrinks toward must not hold the old text's acceptance
                counts.decay(self.cfg.fast_decay)
            counts.add(r.num_spec_tokens, r.num_accepted_tokens)
        for cell, deepest in touched.items():
            self.cells[cell].decay_beyond(deepest, self.cfg.untested_decay)
        self._bucket_cache.clear()  # the cells just changed
        seconds = outcome.step_time_s
        # the first decoding step after start-up or a prefill phase is a warm-up outlier (the
        # issue-14 grid on the AVX2 EPYC, 2026-12-04: B=16 x ctx 512 ran 1752 ms at K = 0, its
        # next K = 0 steps 262-322 ms; B=4 485 vs ~120 ms): its time neither fits the cost
        # model nor stands for no-spec in the guard. Learned from, it made no-spec look 2-6x
        # dearer than it was, and the cold arm ran K = 1-2 (each step 2-3x a K = 0 one) for 27
        # steps of a 37-step trial: 0.843x no-spec.
        if seconds is None or seconds <= 0:
            return
        x = self.cost.features(ctx, drafted, outcome.num_prefill_tokens)
        # a step that also ran prefill rows (a request joining the batch: its prompt's uncached
        # tail, a chunk) costs more than its decode features say, and the profile's fit that
        # judges depths never saw prefill (its term is ~0): at B=4 x ctx 512 on the AVX-512 EPYC
        # (the clean-clone demo of 2026-12-02) a refill step of 2 decoding rows at K = 2 plus 2
        # joining requests ran 69 ms where the fit said ~40, and capped the cell at K = 1 for
        # 12 steps while every draft was accepted. Such a step may verify a depth, not cap one.
        clean = not first_draft and outcome.num_prefill_tokens == 0 and not cold
        if pending is not None:
            self._trust.observe(pending[0], outcome, seconds, x, self._shape,
                                self.cell_state[pending[0]].steps, may_cap=clean)
        if cold:  # may verify a depth (above), but neither fits the cost nor judges the guard
            return
        x0 = self.cost.features(ctx, [0] * b, outcome.num_prefill_tokens)  # as if no-spec
        self.cost.update(x, seconds)
        if pending is None:
            return
        cell, did_draft, probe = pending
        state = self.cell_state.setdefault(cell, CellState())
        tokens = sum(r.num_accepted_tokens + 1 for r in outcome.requests)
        theta, rate = self.cost.theta, tokens / seconds / b
        other = state.mean(not did_draft, theta)  # the population the probe is compared with
        state.record(did_draft, (rate, x0), theta, self.cfg.guard_z)
        if probe:  # a probe that agrees with the cell's choice backs exploration off
            ratio = rate * max(float(x0 @ theta), 1e-6)
            state.probed(confirmed=other is None or ratio <= other)
