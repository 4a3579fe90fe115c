"""`AdaptiveConfig`: the settings of the closed-loop K policy (`adaptive.AdaptivePolicy`).

Priors come from a profile when there is one (`planner.adaptive_prior`): the step cost model and
acceptance per position by context; without them the policy starts from its prior schedule and
learns both online. Buckets (batch size x context) group what is learned and what is frozen into
a schedule: powers of two, as vLLM's DSD tables and the upstream proposal use.
No torch here.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from specsched.errors import UserError
from specsched.policy.cost import StepCostModel

# Lower bounds of the buckets; the last is open-ended.
BATCH_BUCKETS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
CTX_BUCKETS: tuple[int, ...] = (1, 512, 1024, 2048, 4096, 8192, 16384)

Cell = tuple[int, int]  # (batch bucket index, context bucket index)


def cell_of(batch_size: int, ctx: int) -> Cell:
    return (max(0, bisect_right(BATCH_BUCKETS, batch_size) - 1),
            max(0, bisect_right(CTX_BUCKETS, ctx) - 1))


@dataclass(frozen=True, slots=True)
class AdaptiveConfig:
    """max_k: the largest K considered. cost_prior / acceptance_prior: from a profile (None /
    empty: learned online; the prior schedule decides until `warmup_steps` steps are seen).
    request_decay / cell_decay: forgetting per verify of a request / per step of a cell; a
    request also keeps a short-memory estimate (`fast_decay`) that takes over when a CUSUM of its
    first-position outcomes passes `change_h` (the text changed: a repetitive phase turned into
    free text, or back). idle_decay: per step a decoding request drafts nothing (its estimate
    drifts back toward its cell, so a request turned off is tried again later).
    untested_decay: per verify, the extra forgetting of the positions it did not draft (a
    request's, and its cell's beyond the deepest K drafted there): two early rejections at
    position 2 held a request at K = 1 for 13 steps of a 32-token trial while it accepted every
    draft (the K <= 5 grid of 2026-12-02, B=1 x ctx 512, replicate 2); nothing re-tests a
    position K stays below, so its estimate must drift back to its target for K to rise again.
    start_k: the least a request's slow start begins at: before it has verified anything of its
    own it drafts at most the larger of start_k and the K the optimizer chooses for a text
    accepting `start_spread` less per position than its estimate; the cap doubles with each of
    its verifies (a slow start: a profile measured on other text can be far off, and position 0
    is tested as well at K = 1 as at K = 4 — for a fraction of the cost where drafts are dear:
    at B4 x 512 on the AVX-512 EPYC a K = 1 step costs 0.46x a K = 4 one; at B4 x 4096 0.6x, and
    there even a text accepting 0.2 less pays for K = 2 (the profile of 2026-12-06); ramping from
    K = 1 cost the adaptive arm 2-3 of its ~22 steps' worth of drafts in the demo's first wave).
    start_spread: how much less per position a text may accept than its estimate says, as the
    slow start guards against (acceptance differs between texts by about 0.25, below); 1.0: the
    slow start always begins at start_k.
    *_prior_weight: pseudo-verifies of the shrinkage targets (for requests: the default when
    fewer than three requests of the batch have evidence; else estimated from how much they
    differ). The profile's acceptance weighs 3: it was measured on other text, and acceptance
    differs between texts by about 0.25 (0.93 on the profile's corpus vs 0.56 on one demo
    document), a Beta prior with p(1-p)/sd^2 - 1 ~ 3 pseudo-verifies.
    slow_start_evidence: a request's slow start is over (or skipped) once its context bucket
    holds this many (decayed) verifies of the run's own requests: its acceptance was then
    measured on this workload's text, not the profile's, and a refilled slot of a serving batch
    starts at its mates' K instead of spending two of its ~10 verifies ramping up (4: the
    profile's acceptance weighs 3, so the bucket's estimate is then mostly this run's; 8 before
    2026-12-02, when a B=1 trial's second request still ramped after a 32-token first one).
    extrapolated_cost_weight: the cost prior's evidence, in steps, in a cell outside the box
    its samples covered (`StepCostModel.covers`; inside it counts `OnlineStepCost`'s 50): a
    profile of B {1, 4} extrapolated to B = 16 overstated a K = 1 step by 10 % on this CPU, and a
    cell held at K = 0 by such a prior learns its draft costs only from exploration probes.
    cost_speed_sd: how far the machine's speed may stray from the cost prior's as a whole
    (relative sd of `cost.OnlineStepCost`'s speed coefficient; 0: each term learns alone).
    5, not 2 (2026-12-06, thirty-eighth stop): K = 0 steps at 1.6x the profile's time, seen
    alone, lowered T(K = 1) / T(0) by 4 % with sd 2 (2.03 -> 1.94 after 30 steps: the K = 0
    terms took part of the slowdown) and made K = 1 look cheap enough for 16 requests at
    B16 x 512; with 5, by 0.8 %.
    trust_inside_box: trust the cost model's deeper K inside the prior's box without checking
    (False: every cell's K rises only one above the deepest K whose steps cost what the model
    said there, `adaptive_trust.TrustRegion`; inside the box too, since a linear fit smooths
    away the superlinear cost of deep drafts at B >= 4 on this CPU).
    margin: switch K only for a predicted goodput gain above it (hysteresis).
    split_z: per request, requests get different K only where the split beats the best single
    K with every acceptance estimate moved this many binomial SEs against it
    (`optimize.robust_split`; 0: the per-request optimum as estimated). Splits inside the
    estimates' noise cost: a row held a K below its mates falls behind and finishes alone
    (trace_sim_b4, the demos' B4 x 512 texts: 0.963 -> 0.975x the best static K at 1.5; 1.0:
    0.969; B4 x 4096 0.999 -> 0.998; B = 1 unchanged by construction; 2026-12-07).
    free_descent: at a step with more decoding requests than the last, a choice that drafts
    less for some requests and more for none switches at once when predicted no worse (a K
    chosen while the batch was smaller, where deep drafts paid, is not held by the margin).
    min_gain: draft only where the choice's predicted goodput beats K = 0's by more than this
    fraction: an uncertain gain of a percent or two is not worth the drafting's risk (on a
    break-even cell the hysteresis alone kept the prior's K: the one-run grid of 2026-12-05,
    B16 x 512 on the AVX-512 EPYC, K = 1 step 1.99x a K = 0 one, a text accepting 0.97 gave
    K = 1 a predicted 0-1 % gain; anchored at its prior schedule's K = 1, the arm drafted 29-34
    of ~38 steps in two replicates and measured 0.951 and 0.938x no-spec, the cell 0.974).
    explore_every / explore_budget: probe K=1 in a cell at K=0 (and K=0 in a cell that drafts,
    the guard's reference) every N of its steps, at most this fraction of steps; a probe that
    confirms the current choice doubles the cell's period (up to 4x). guard_z: a cell whose
    measured speculative goodput is below no-spec by more than z standard errors drafts nothing
    for a cooldown, then is judged afresh (`adaptive_guard`). guard_release: a cooldown whose
    verdict was passed on at most this many requests ends once none of them decodes in the cell
    (at B = 1 the next request's text is not the last one's; 0: every cooldown runs out).
    probe_lockstep: let a cell at K = 0 run its periodic K = 1 probe while the batch decodes
    in lockstep (two or more requests, every one with the same room: they finish on one step
    and the next requests prefill together). False: the probe waits until the rooms differ:
    its accepted drafts would finish the probed requests a step early and split the next
    wave's prefill in two (B16 x 512 on the AVX-512 EPYC, 2026-12-06: 289 + 608 ms against
    no-spec's one 706 ms step, ~2 % of the trial, from a probe that itself cost ~45 ms; the
    cell's ceiling gain there is 1.00-1.03, so `patient` alone did not hold it). A request's
    own estimate still drifts back while idle (`idle_decay`), so K > 0 is re-tried through the
    optimizer; K = 0 probes and the early probes of a cell outside the cost prior's box run
    regardless.
    drain_aware: while the batch drains (it shrank since a request last joined; the engine,
    which knows each request's tokens left), K per request finishes the batch soonest instead
    of maximizing tokens per second (`AdaptivePolicy._choose`). Off by default: on the engine
    it measured 1.000x the throughput choice on the demo's B=4 workloads and 0.954-1.021x in
    the grid's B = 4 and 16 cells, 4 replicates, whose noise was +-2.6 % (2026-12-05).
    share_speed: a cell's first step sets its trust region's machine speed (the cost model's
    time over the measured time) to what its most recently judged neighbour knows
    (`TrustRegions.open`); False: a fresh region judges at the profile's speed until its own
    K = 1 steps (the behaviour before 2026-12-06's thirty-eighth stop, kept for A/B runs)."""

    max_k: int = 4
    cost_prior: StepCostModel | None = None
    acceptance_prior: tuple[tuple[int, tuple[float, ...]], ...] = ()
    request_decay: float = 0.95
    fast_decay: float = 0.6
    change_h: float = 4.0
    cell_decay: float = 0.95
    idle_decay: float = 0.95
    untested_decay: float = 0.7
    request_prior_weight: float = 4.0
    cell_prior_weight: float = 3.0
    start_k: int = 1
    start_spread: float = 0.2
    slow_start_evidence: float = 4.0
    extrapolated_cost_weight: float = 5.0
    cost_speed_sd: float = 5.0
    trust_inside_box: bool = False
    margin: float = 0.03
    split_z: float = 1.5
    free_descent: bool = True
    min_gain: float = 0.03
    explore_every: int = 24
    explore_budget: float = 0.06
    guard_z: float = 2.0
    guard_release: int = 1
    warmup_steps: int = 24
    max_tracked_requests: int = 8192
    drain_aware: bool = False
    probe_lockstep: bool = False
    share_speed: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.max_k <= 16:
            raise UserError(f"adaptive: max_k must be in [1, 16], got {self.max_k}")
        for name in ("request_decay", "cell_decay", "idle_decay", "fast_decay",
                     "untested_decay"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise UserError(f"adaptive: {name} must be in (0, 1], got {value}")
        if not 1 <= self.start_k <= self.max_k:  # 0 would never draft: no verify to ramp on
            raise UserError(f"adaptive: start_k must be in [1, max_k={self.max_k}], "
                            f"got {self.start_k}")
        if not 0.0 <= self.start_spread <= 1.0:
            raise UserError(f"adaptive: start_spread must be in [0, 1], got {self.start_spread}")
        if self.slow_start_evidence < 0:
            raise UserError("adaptive: slow_start_evidence must be >= 0, got "
                            f"{self.slow_start_evidence}")
        if not isinstance(self.free_descent, bool):
            raise UserError("adaptive: free_descent must be true or false, got "
                            f"{self.free_descent!r}")
        if not isinstance(self.drain_aware, bool):
            raise UserError("adaptive: drain_aware must be true or false, got "
                            f"{self.drain_aware!r}")
        for name in ("probe_lockstep", "share_speed"):
            if not isinstance(getattr(self, name), bool):
                raise UserError(f"adaptive: {name} must be true or false, got "
                                f"{getattr(self, name)!r}")
        if not isinstance(self.trust_inside_box, bool):
            raise UserError("adaptive: trust_inside_box must be true or false, got "
                            f"{self.trust_inside_box!r}")
        if not 0.0 <= self.cost_speed_sd <= 10.0:
            raise UserError("adaptive: cost_speed_sd must be in [0, 10], got "
                            f"{self.cost_speed_sd}")
        if self.extrapolated_cost_weight <= 0:
            raise UserError("adaptive: extrapolated_cost_weight must be > 0, got "
                            f"{self.extrapolated_cost_weight}")
        if self.margin < 0 or self.explore_every < 2 or not 0 <= self.explore_budget < 0.5:
            raise UserError("adaptive: need margin >= 0, explore_every >= 2, "
                            "0 <= explore_budget < 0.5")
        if isinstance(self.guard_release, bool) or not (
                isinstance(self.guard_release, int) and self.guard_release >= 0):
            raise UserError("adaptive: guard_release must be a whole number >= 0, got "
                            f"{self.guard_release!r}")
        if not 0.0 <= self.split_z <= 10.0:
            raise UserError(f"adaptive: split_z must be in [0, 10], got {self.split_z}")
        if not 0.0 <= self.min_gain < 1.0:
            raise UserError(f"adaptive: min_gain must be in [0, 1), got {self.min_gain}")
        for ctx, a in self.acceptance_prior:
            if ctx < 1 or not a or any(not 0.0 <= x <= 1.0 for x in a):
                raise UserError(f"adaptive: acceptance prior at ctx {ctx} must be rates in "
                                f"[0, 1], got {a}")
