"""Step cost as a small linear model of what a step does, fitted to a profile and corrected online.

One engine step with decoding requests i (context c_i, K_i drafts) and P prefill tokens costs

    T = a + b·B + c·Σc_i + d·ΣK_i + e·ΣK_i·c_i + f·max K_i + g·P + h·Σc_i·x_i      (seconds)

- a: per-step overhead; b: per decoding row (sampling, bookkeeping, the row of every matmul);
- c: attention over the KV cache (bytes read ~ Σ context, MagicDec's memory-bound term);
- d, e: the K extra verify rows per request and their attention (q = K + 1 rows read the context);
- f: sequential draft steps (a self-draft or small model runs max K forwards, each reading its
  weights once whatever the rows); g: prefill tokens of chunks in the same step;
- h: attention's extra passes over a request's context once its q = K + 1 query rows no longer
  fit one tile: x_i = ceil((K_i + 1) / q_tile) - 1. The native kernel packs the G·q rows of a KV
  head into 16 vector lanes (q_tile = 16 / G: 5 for SmolLM2's G = 3), so its QK^T, exp and P·V
  work per context token doubles at G·q > 16 while K/V are still read once: a step, not a
  slope (B=4 x ctx 4096: K=5 cost 8-10 % above the line through K = 0..4 on AVX-512 CPUs).
  `q_tile` is found in the profile's data (`planner.adaptive_prior`), not assumed; None: no term.
MagicDec (arXiv:2408.11049) reasons with the same terms: verify ≈ decode when weights dominate,
KV reads grow with context, and the draft's cost is its own weights times its steps.

`fit_step_cost` solves least squares on (features, seconds) samples — profile points or engine
steps — with a small ridge so unmeasured terms (no prefill in a profile) stay near zero.
`OnlineStepCost` is recursive least squares with forgetting, seeded from such a fit: each observed
step moves the coefficients; old evidence fades so a changed machine load is followed.
Features are scaled (contexts per 1,000 tokens) so the regression stays well conditioned.
No torch here; numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specsched.policy.cost_shape import CostShape

FEATURES = ("const", "rows", "ctx_k", "drafts", "draft_ctx_k", "draft_steps", "prefill",
            "tile_ctx_k")
NUM_FEATURES = len(FEATURES)
CTX_UNIT = 1000.0  # contexts enter in thousands of tokens
# A typical step's features (4 requests at 2k context, K = 2, no prefill; 64 prefill tokens as
# the unit of the prefill term; the tile term as if each request had one extra pass): the online
# model learns in units of these, so its prior confidence means the same for every term.
TYPICAL_FEATURES = (1.0, 4.0, 8.0, 8.0, 16.0, 2.0, 64.0, 8.0)


def tile_passes(ks: np.ndarray, q_tile: int | None) -> np.ndarray:  # like ks
    """Extra attention passes per context token at K drafts: ceil((K + 1) / q_tile) - 1."""
    ks = np.asarray(ks, dtype=np.float64)
    return np.ceil((ks + 1.0) / q_tile) - 1.0 if q_tile else np.zeros_like(ks)


def step_features(
    contexts: Sequence[int],  # [B] num_computed_tokens of the decoding requests
    num_spec_tokens: Sequence[int],  # [B] K_i (drafts verified this step)
    num_prefill_tokens: int = 0,
    q_tile: int | None = None,  # query rows per attention tile (see module doc); None: no term
) -> np.ndarray:  # [NUM_FEATURES]
    """The feature vector x of one step (T = θ·x)."""
    ctx = np.asarray(contexts, dtype=np.float64) / CTX_UNIT
    ks = np.asarray(num_spec_tokens, dtype=np.float64)
    extra = tile_passes(ks, q_tile)  # [B]
    return np.array([
        1.0,
        float(len(ctx)),
        float(ctx.sum()),
        float(ks.sum()),
        float((ks * ctx).sum()),
        float(ks.max()) if len(ks) else 0.0,
        float(num_prefill_tokens),
        float((extra * ctx).sum()),
    ])


@dataclass(frozen=True, slots=True)
class StepCostModel:
    """θ (seconds per unit of each feature) and how well it fitted (relative RMS residual)."""

    coef: tuple[float, ...]  # [NUM_FEATURES] (seven terms, from before the tile term: h = 0)
    rel_rmse: float = 0.0  # sqrt(mean((pred - y)^2 / y^2)) over the fitted samples
    num_samples: int = 0
    typical_seconds: float = 0.05  # a typical step's time (the online model's unit)
    # the (B, context) box the fitted samples covered; None: unknown (trusted everywhere)
    batch_range: tuple[int, int] | None = None
    ctx_range: tuple[int, int] | None = None
    # (B, context, depth) per profiled point: the deepest K up to which every profiled step there
    # cost what this fit says (`adaptive_trust.verified_depth`); the trust region's seed
    verified_depths: tuple[tuple[int, int, int], ...] = ()
    q_tile: int | None = None  # query rows per attention tile (the tile term); None: no term
    # measured / fitted per profiled (B, context, K) (`cost_shape`); None: the plane alone
    shape: CostShape | None = None

    def __post_init__(self) -> None:
        if len(self.coef) == NUM_FEATURES - 1:
            object.__setattr__(self, "coef", (*self.coef, 0.0))
        if len(self.coef) != NUM_FEATURES:
            raise ValueError(f"a step cost model has {NUM_FEATURES} coefficients, got "
                             f"{len(self.coef)}")
        if self.q_tile is not None and self.q_tile < 1:
            raise ValueError(f"a step cost model's q_tile must be >= 1, got {self.q_tile}")
        for name, box in (("batch_range", self.batch_range), ("ctx_range", self.ctx_range)):
            if box is not None and not 0 <= box[0] <= box[1]:
                raise ValueError(f"a step cost model's {name} must be (lo, hi) with "
                                 f"0 <= lo <= hi, got {box}")
        for point in self.verified_depths:
            if len(point) != 3 or point[0] < 1 or point[1] < 1 or point[2] < 0:
                raise ValueError("a step cost model's verified_depths are (B >= 1, ctx >= 1, "
                                 f"depth >= 0), got {point}")

    def covers(self, batch_size: int, ctx: int, slack: float = 1.25) -> bool:
        """Whether B requests at context ctx lie inside the fitted box, widened by `slack` on
        each side (a prediction there interpolates; far outside it extrapolates a linear model
        along terms the samples may not pin down)."""
        def inside(x: int, box: tuple[int, int] | None) -> bool:
            return box is None or box[0] / slack <= x <= box[1] * slack

        return inside(batch_size, self.batch_range) and inside(ctx, self.ctx_range)

    def features(self, contexts: Sequence[int], num_spec_tokens: Sequence[int],
                 num_prefill_tokens: int = 0) -> np.ndarray:  # [NUM_FEATURES]
        """`step_features` with this model's tile size."""
        return step_features(contexts, num_spec_tokens, num_prefill_tokens, self.q_tile)

    def plane(self, x: np.ndarray) -> float:
        """Seconds for a step with features x on the linear model alone (>= 1 microsecond)."""
        return max(float(np.dot(self.coef, x)), 1e-6)

    def predict(self, x: np.ndarray) -> float:
        """Seconds for a step with features x: the plane times the profile's measured / fitted
        ratio at its batch size, mean context and deepest K (`shape`; none: the plane)."""
        plane = self.plane(x)
        rows = float(x[1])
        if self.shape is None or rows < 1:
            return plane
        ctx = round(CTX_UNIT * float(x[2]) / rows)
        k = round(float(x[5]))
        return plane * float(self.shape.ratios(round(rows), max(ctx, 1), k)[k])

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"features": list(FEATURES), "coef": list(self.coef),
                                  "rel_rmse": self.rel_rmse, "num_samples": self.num_samples,
                                  "typical_seconds": self.typical_seconds}
        if self.batch_range is not None:
            out["batch_range"] = list(self.batch_range)
        if self.ctx_range is not None:
            out["ctx_range"] = list(self.ctx_range)
        if self.verified_depths:
            out["verified_depths"] = [list(p) for p in self.verified_depths]
        if self.q_tile is not None:
            out["q_tile"] = self.q_tile
        if self.shape is not None:
            out["shape"] = self.shape.to_json()
        return out


def fit_step_cost(
    xs: np.ndarray,  # [N, NUM_FEATURES] step features
    ys: np.ndarray,  # [N] step seconds
    ridge: float = 1e-6,
) -> StepCostModel:
    """Least squares on relative error (each sample weighted 1/y: a 5 ms step matters as much as
    a 500 ms one), with a ridge of `ridge` x the mean of each column's square (scale-free)."""
    xs = np.asarray(xs, dtype=np.float64)
    ys = np.asarray(ys, dtype=np.float64)
    if xs.ndim != 2 or xs.shape[1] != NUM_FEATURES or len(xs) != len(ys) or len(ys) == 0:
        raise ValueError(f"need [N, {NUM_FEATURES}] features and N > 0 times")
    w = 1.0 / np.maximum(ys, 1e-9)  # [N]
    a = xs * w[:, None]
    b = ys * w  # [N] = 1
    scale = np.sqrt((a**2).mean(axis=0)) + 1e-12  # [F]
    lam = ridge * len(ys)
    lhs = (a / scale).T @ (a / scale) + lam * np.eye(NUM_FEATURES)
    rhs = (a / scale).T @ b
    coef = np.linalg.solve(lhs, rhs) / scale
    pred = xs @ coef
    rel = float(np.sqrt(np.mean(((pred - ys) / np.maximum(ys, 1e-9)) ** 2)))
    typical = float(np.exp(np.log(np.maximum(ys, 1e-9)).mean()))  # geometric mean
    return StepCostModel(tuple(float(c) for c in coef), rel, len(ys), typical)


class OnlineStepCost:
    """Recursive least squares on relative error, with exponential forgetting.

    Learns v = θ ∘ TYPICAL_FEATURES / t0 (the share of a typical step each term costs; t0 the
    prior's typical step time): every component is O(0.1..1), so one prior confidence serves all.
    `prior_weight` is how many steps' worth of evidence the prior counts as (P0 = I / weight);
    without a prior the model starts at zero with almost no confidence. Residuals are clipped at
    `clip` (relative) so one stalled step does not drag the model.

    With a prior and `speed_sd` > 0 the model has one more coefficient: the machine's speed
    against the prior's as a whole, s (θ = v / unit + s θ_prior; s starts at 0 with variance
    speed_sd^2), learned from every step. A batch that has run only K = 0 steps slower than the
    profile then scales every term, the per-draft ones too, instead of raising the K = 0 terms
    alone: grid 35's B16 x 512 (2026-12-06, AVX-512 EPYC) ran its K = 0 steps 13 % slower than
    the profile, its K = 1 / K = 0 fell from 1.97 to 1.86 in the model (2.0 measured), and 16
    requests drafted K = 1 for 12 steps at no gain (`notes/scripts/speed_sim.py`).
    """

    def __init__(self, prior: StepCostModel | None, forgetting: float = 0.995,
                 prior_weight: float = 50.0, clip: float = 0.5, speed_sd: float = 0.0) -> None:
        self.forgetting = forgetting
        self.clip = clip
        self.t0 = 0.05 if prior is None else prior.typical_seconds
        self.unit = np.asarray(TYPICAL_FEATURES) / self.t0  # θ = v * unit^-1 ... see theta
        # [F + 1]: the terms' shares of a typical step, then the speed coefficient s (0: off)
        self.prior_theta = np.zeros(NUM_FEATURES) if prior is None else np.asarray(prior.coef)
        scaled = prior is not None and speed_sd > 0
        self.v = np.append(self.prior_theta * self.unit, 0.0)
        self.P = np.diag(np.append(
            np.full(NUM_FEATURES, 1.0 / (prior_weight if prior is not None else 1e-2)),
            speed_sd ** 2 if scaled else 0.0))
        self.q_tile = None if prior is None else prior.q_tile
        self.num_updates = 0

    @property
    def theta(self) -> np.ndarray:  # [F] seconds per unit of each feature
        return self.v[:NUM_FEATURES] / self.unit + self.v[NUM_FEATURES] * self.prior_theta

    @property
    def model(self) -> StepCostModel:
        return StepCostModel(tuple(float(t) for t in self.theta), 0.0, self.num_updates, self.t0,
                             q_tile=self.q_tile)

    def features(self, contexts: Sequence[int], num_spec_tokens: Sequence[int],
                 num_prefill_tokens: int = 0) -> np.ndarray:  # [NUM_FEATURES]
        """`step_features` with the prior's tile size."""
        return step_features(contexts, num_spec_tokens, num_prefill_tokens, self.q_tile)

    def predict(self, x: np.ndarray) -> float:
        return max(float(np.dot(self.theta, x)), 1e-6)

    def add_uncertainty(self, weight: float) -> None:
        """Process noise (a Kalman filter's Q = I / weight): the prior's evidence is worth at
        most about `weight` steps from now on, e.g. where it extrapolates beyond its samples."""
        self.P[:NUM_FEATURES, :NUM_FEATURES] += np.eye(NUM_FEATURES) / weight

    def update(self, x: np.ndarray, seconds: float) -> None:
        """One observed step: x its features, `seconds` its wall time."""
        if not np.isfinite(seconds) or seconds <= 0:
            return
        # [F + 1]: z·v = predicted / observed, ideally 1 (the last: the prior's prediction)
        z = np.append(x / self.unit, float(self.prior_theta @ x)) / seconds
        err = max(-self.clip, min(self.clip, 1.0 - float(np.dot(z, self.v))))
        pz = self.P @ z
        gain = pz / (self.forgetting + float(z @ pz))
        self.v = self.v + gain * err
        self.P = (self.P - np.outer(gain, pz)) / self.forgetting
        self.num_updates += 1
