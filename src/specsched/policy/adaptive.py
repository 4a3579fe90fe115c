"""The closed-loop K policy: learn acceptance and step cost online, choose K per request (or per
step) to maximize expected goodput, never stay on a losing choice.

Each step (`decide`):
1. acceptance per decoding request and draft position: its own decayed counts, shrunk toward its
   context bucket's counts, shrunk toward the profile's acceptance at that context
   (`adaptive_acceptance`); expected tokens E_i(k) for k = 0..max_k;
2. step cost from the online regression (`cost.OnlineStepCost`): T = base + Σ c_i K_i + f max K;
3. K maximizing Σ E_i / T (`optimize`): per request in the engine — a request that accepts poorly
   gets K = 0 while others draft, a shrinking batch gets the K its own size deserves — or one K
   per step (vLLM); per request, different K only where that survives the estimates' SEs
   (`split_z`); no estimates at all where no K could pay at full acceptance (the K = 0 fast
   path, `step_costs.drafting_bound`); optionally (`drain_aware`), while the batch drains (no
   request joins as others finish), K per request that finishes it soonest; a request
   whose context bucket holds no evidence of this run yet drafts under a slow start's cap,
   doubling per verify from the K a text accepting `start_spread` less would pay for;
4. hysteresis: the previous K of each request (for a new one: the prior schedule's K) is kept
   unless the new choice is predicted better by more than `margin` (or, when the batch has
   grown, is shallower for no request deeper and predicted no worse: `free_descent`);
5. the cell's guard (`adaptive_guard`) forces K = 0 where drafting measurably loses; bounded
   exploration probes K = 1 (for a few requests; not while the batch decodes in lockstep, every
   room equal: `probe_lockstep`) in cells at K = 0 and K = 0 in cells that
   draft (early, in a cell outside the cost prior's box, where the prior's costs are
   extrapolated; such a cell drafts at most K = 1 until its guard has judged); a new cell next
   to a guarded one starts guarded; a cooldown passed on one request ends when it leaves
   (`guard_release`: at B = 1 the next request's text was not judged).
`observe` feeds the verified outcome (drafts, accepted per request, step time) back.
Deterministic: the same observations give the same decisions (no randomness at all).
No torch here; numpy only.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from specsched.policy.adaptive_acceptance import AcceptanceBook
from specsched.policy.adaptive_choice import choose, start_ks
from specsched.policy.adaptive_config import AdaptiveConfig, Cell, cell_of
from specsched.policy.adaptive_guard import PROBE_SHARE, CellState, explore, ratio
from specsched.policy.adaptive_trust_regions import TrustRegions
from specsched.policy.base import KPolicy
from specsched.policy.batch import BatchState, KDecision, StepOutcome
from specsched.policy.cost import OnlineStepCost
from specsched.policy.step_costs import (
    Costs,
    ceiling_gain,
    drafting_bound,
    plane_costs,
    shaped_costs,
    shaped_features,
    warmup_ks,
)

# the largest draining batch whose K finishes it soonest (`drain.best_drain`: ~3 ms at 16
# requests on the AVX2 EPYC, ~30 at 64); a larger one keeps the throughput choice till then
MAX_DRAIN_BATCH = 16


class Pending(NamedTuple):
    """The last decision, credited by `observe`: its cell, whether it drafted, whether it was an
    exploration probe, and whether that probe drafted for some of the requests only."""

    cell: Cell
    drafted: bool
    probe: bool
    partial: bool


class AdaptivePolicy:
    """A `KPolicy` that learns (see module doc). `prior`: the open-loop policy whose K anchors
    new requests and decides while the cost model has no profile prior and too few steps."""

    def __init__(self, cfg: AdaptiveConfig, prior: KPolicy, per_request: bool) -> None:
        self.cfg = cfg
        self.prior = prior
        self.per_request = per_request
        self.cost = OnlineStepCost(cfg.cost_prior, speed_sd=cfg.cost_speed_sd)
        self.acceptance = AcceptanceBook(cfg)
        self.cell_state: dict[Cell, CellState] = {}
        self.num_steps = 0
        self.num_explored = 0
        self.last_step_k = 0
        self._pending: Pending | None = None
        # the next decoding step is the first after start-up or after steps with no decoding
        # request (a prefill phase): it runs several times slower than its features say
        self._cold_step = True
        # the batch size when a request last joined (or the batch last grew): a batch below it
        # is draining (`_draining`)
        self._peak = 0
        self._rows = 0  # decoding requests at the last decision (`_choose`'s free descent)
        # the step cost whose SHAPE in K the trust region checks: the profile's fit where there
        # is one (fixed: how much dearer depth k is than K = 1 moves little between machines,
        # while the online model, pulled from a prior twice the machine's time, cuts its
        # per-draft terms faster than its base for a few dozen steps), else the online model
        # (the prior's plane: the trust region judges cost against the linear fit, with or
        # without the profile's shape, `costs`)
        self._judge = self.cost.predict if cfg.cost_prior is None else cfg.cost_prior.plane
        self._shape = None if cfg.cost_prior is None else cfg.cost_prior.shape
        self._trust = TrustRegions(  # how deep each cell may draft
            cfg.trust_inside_box, () if cfg.cost_prior is None else cfg.cost_prior.verified_depths)

    @property
    def max_k(self) -> int:
        return self.cfg.max_k

    # -- estimates ------------------------------------------------------------------------------
    def bucket_acceptance(self, ctx_bucket: int) -> np.ndarray:  # [max_k]
        return self.acceptance.bucket_acceptance(ctx_bucket)

    def costs(self, ctx: list[int]) -> Costs:
        """(T at K = 0, seconds each request's k drafts add [n, max_k + 1], seconds per draft
        step): the online plane's in the profile's shape (`step_costs`)."""
        return shaped_costs(plane_costs(self.cost, ctx, self.max_k), self._shape, ctx,
                            self.max_k)

    # -- decide ---------------------------------------------------------------------------------
    def decide(self, batch: BatchState) -> KDecision:
        n = len(batch)
        decoding = [i for i in range(n) if batch.is_decoding(i)]
        draining = self._draining(n, len(decoding) < n)
        prior = self.prior.decide(batch)
        grew, self._rows = len(decoding) > self._rows, len(decoding)
        if not decoding:
            self._pending = None
            return KDecision((0,) * n, 0, prior.route)
        ids, computed = batch.ids, batch.num_computed_tokens
        reqs = [self.acceptance.request(ids[i]) for i in decoding]
        ctx = [computed[i] for i in decoding]
        room = batch.room
        caps = np.array([min(self.cfg.max_k, max(0, room[i])) if room is not None
                         else self.cfg.max_k for i in decoding])
        mean_ctx = sum(ctx) // len(decoding)
        cell = cell_of(len(decoding), mean_ctx)
        state = self._cell(cell)
        if state.verdict_on:  # a cooldown that may end when its judged request has left
            state.release([ids[i] for i in decoding], self.cfg.guard_release)
        self._check_extrapolation(cell, state, len(decoding), mean_ctx)
        # a new request starts from its batch mates' K (the median), or the prior's K; so does
        # one whose last K was the slow start's cap (not a choice: held, the cap's K = 2 ran 12
        # steps of the demo's B4 x 512 arm of 2026-12-05 at full acceptance, where the prior
        # said K = 3: 0.942x the 2-D arm). A trust region's cap (evidence of cost) stays held.
        # In that median a request held at the cap votes for the prior's K: counting only the
        # others, one request's miss at the ramp's K = 2 made the median 2 for its three mates
        # that had accepted every draft, and they drafted K = 2 where the plan said 3 (the
        # demo's B4 x 512, 2026-12-06: 5 K = 2 steps at full acceptance, 0.935x the 2-D arm).
        known = sorted(prior.num_spec_tokens[i] if r.capped else r.last_k
                       for r, i in zip(reqs, decoding, strict=True) if r.last_k is not None)
        fresh = [known[len(known) // 2]] * n if known else prior.num_spec_tokens
        anchor = np.array([r.last_k if r.last_k is not None and not r.capped else fresh[i]
                           for r, i in zip(reqs, decoding, strict=True)])
        gain = np.inf  # predicted goodput of the choice / of K = 0 (not known in the warm-up)
        costs = self.costs(ctx)
        slow = np.full(len(decoding), self.cfg.max_k)  # [n] the slow start's caps
        ks: np.ndarray | None = None
        if self.cfg.cost_prior is None and self.cost.num_updates < self.cfg.warmup_steps:
            ks = warmup_ks(np.minimum(anchor, caps), caps, self.num_steps, self.cfg.max_k)
        else:
            caps = np.minimum(caps, self._trust.cap(cell, state.steps, self.cfg.max_k))
        if ks is None and not (draining and self.cfg.drain_aware) and (
                drafting_bound(costs) <= 1.0 + self.cfg.min_gain):
            # the K = 0 fast path: no K could gain min_gain even if every draft were
            # accepted, so `choose` would return K = 0 (gain 1): skip the estimates (most of a
            # 0.6-0.9 ms decide at B = 16)
            ks, gain = np.zeros(len(decoding), dtype=np.int64), 1.0
        elif ks is None:
            acc, evidence = self.acceptance.acceptance_evidence(reqs, ctx)  # [n, max_k]
            ramping = np.array([self.acceptance.ramping(r, c)
                                for r, c in zip(reqs, ctx, strict=True)])
            start = start_ks(self.cfg, self.per_request, ramping, acc, costs, caps)
            slow = np.array([self.acceptance.slow_start_cap(r, c, int(s))
                             for r, c, s in zip(reqs, ctx, start, strict=True)])
            caps = np.minimum(caps, slow)
            remaining = (np.array([room[i] + 1 for i in decoding], dtype=np.float64)
                         if room is not None and draining and self.cfg.drain_aware
                         and len(decoding) <= MAX_DRAIN_BATCH else None)
            ks, gain = self._choose(acc, ctx, costs, caps, np.minimum(anchor, caps),
                                    remaining, grew, evidence)
        budget_ok = self.num_explored < self.cfg.explore_budget * (self.num_steps + 1)
        lockstep = (room is not None and len(decoding) > 1 and not self.cfg.probe_lockstep
                    and len({room[i] for i in decoding}) == 1)
        ks, probe = explore(state, ks, caps, self.cfg.explore_every, budget_ok, gain,
                            PROBE_SHARE if self.per_request else 1,
                            patient=ceiling_gain(costs) <= 1.0 + self.cfg.min_gain,
                            hold=lockstep)
        self.num_explored += probe
        # a K = 1 probe over a few of the cell's requests: its step teaches the cost model and
        # the back-off, but is no sample of the cell's drafting for the guard (diluted)
        partial = probe and bool(ks.any()) and bool((ks < np.minimum(1, caps)).any())
        for r, k, cap in zip(reqs, ks, slow, strict=True):
            if not probe:
                r.last_k, r.capped = int(k), bool(k >= cap < self.cfg.max_k)
        self.acceptance.idle(reqs, [int(k) for k in ks], ctx)
        state.advance()
        self.num_steps += 1
        self._pending = Pending(cell, bool(ks.any()), probe, partial)
        out = [0] * n
        for i, k in zip(decoding, ks, strict=True):
            out[i] = int(k)
        step_k = int(ks.max())
        self.last_step_k = step_k
        return KDecision(tuple(out), step_k, prior.route)

    def _draining(self, batch_size: int, joining: bool) -> bool:
        """Whether the batch shrank since a request last joined it: requests finish and no
        new ones take their place, so the batch only runs until its last request is done.
        (Observed, not foreseen: a closed-loop client refills a slot in the same step; a
        server whose queue is empty sees its load fall.)"""
        if joining or batch_size >= self._peak:
            self._peak = batch_size
        return batch_size < self._peak

    def _cell(self, cell: Cell) -> CellState:
        """The cell's state; at its first step it inherits an adjacent batch bucket's guard
        (same context bucket; `CellState.inherit_guard`)."""
        state = self.cell_state.get(cell)
        if state is None:
            state = self.cell_state[cell] = CellState()
            state.inherit_guard([s for c, s in self.cell_state.items()
                                 if c[1] == cell[1] and abs(c[0] - cell[0]) == 1])
        return state

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
        speed_from = self._judge if self.cfg.share_speed else None  # a neighbour's speed
        if self._trust.open(cell, inside, speed_from) and not inside:
            self.cost.add_uncertainty(self.cfg.extrapolated_cost_weight)
            state.early_probe = state.extrapolated = True

    def _choose(self, acc: np.ndarray, ctx: list[int], costs: Costs,
                caps: np.ndarray, anchor: np.ndarray, remaining: np.ndarray | None = None,
                grew: bool = False, evidence: np.ndarray | None = None
                ) -> tuple[np.ndarray, float]:
        """K per request and its predicted goodput over K = 0's (`adaptive_choice.choose`)."""
        return choose(self.cfg, self.per_request, acc, ctx, costs, caps, anchor,
                      self.cost.theta, remaining, grew, evidence)

    # -- observe --------------------------------------------------------------------------------
    def observe(self, outcome: StepOutcome) -> None:
        pending, self._pending = self._pending, None
        first_draft = self.acceptance.observe(outcome)  # may verify a depth, not cap one
        if not outcome.requests:
            self._cold_step = True
            return
        cold, self._cold_step = self._cold_step, False
        ctx, drafted, prefill = outcome.step_rows()  # [rows]: decoding, then prompt chunks
        seconds = outcome.step_time_s
        # the first decoding step after start-up or a prefill phase is a warm-up outlier (AVX2
        # EPYC, 2026-12-04: B16 x 512 1752 ms at K = 0, its next K = 0 steps 262-322 ms): it
        # neither fits the cost model nor stands for no-spec in the guard. Learned from, it made
        # no-spec look 2-6x dearer, and the arm ran K = 1-2 for 27 of 37 steps: 0.843x no-spec.
        if seconds is None or seconds <= 0:
            return
        x = self.cost.features(ctx, drafted, prefill)
        # the step in the profile's shape, read before the model learns from it (`step_costs`)
        plane = plane_costs(self.cost, ctx, self.max_k)
        in_shape = shaped_costs(plane, self._shape, ctx, self.max_k)
        shaped = shaped_features(x, self.cost.predict(x), plane, in_shape, drafted)
        # a step that also ran prefill rows (a request joining the batch: its prompt's uncached
        # tail, a chunk) costs more than its decode features say, and the profile's fit that
        # judges depths never saw prefill (its term is ~0): at B=4 x ctx 512 on the AVX-512 EPYC
        # (the clean-clone demo of 2026-12-02) a refill step of 2 decoding rows at K = 2 plus 2
        # joining requests ran 69 ms where the fit said ~40, and capped the cell at K = 1 for
        # 12 steps while every draft was accepted. Such a step may verify a depth, not cap one.
        clean = not first_draft and outcome.num_prefill_tokens == 0 and not cold
        if pending is not None:
            self._trust.observe(pending.cell, outcome, seconds, x, self._judge,
                                self.cell_state[pending.cell].steps, may_cap=clean)
        if cold:  # may verify a depth (above), but neither fits the cost nor judges the guard
            return
        no_drafts = [0] * len(ctx)  # x0: the same rows as if no-spec
        x0 = self.cost.features(ctx, no_drafts, prefill)
        x0 = shaped_features(x0, self.cost.predict(x0), plane, in_shape, no_drafts)
        self.cost.update(shaped, seconds)
        if pending is None:
            return
        cell, did_draft, probe, partial = pending
        state = self.cell_state[cell]
        tokens = sum(r.num_accepted_tokens + 1 for r in outcome.requests)
        # x0: as if no-spec (shaped before the update, like x)
        sample, theta = (tokens / len(outcome.requests), seconds, x0, shaped), self.cost.theta
        # a probe is compared with the other population (read before this step joins its own)
        other = state.mean(not did_draft, theta) if probe else None
        if not partial:
            state.record(did_draft, sample, theta, self.cfg.guard_z,
                         [r.request_id for r in outcome.requests])
        if probe:  # a probe that agrees with the cell's choice backs exploration off
            state.probed(confirmed=other is None or ratio(sample, theta) <= other)
