"""The profile: measured (or modelled) step times and acceptance over a (batch, context, K) grid.

`Profile` is the versioned, engine-neutral input of the planner. Step time T(B, ctx, K) is
`t_step_ms` of a point: for K = 0 the plain (no-spec) decode step, for K > 0 one whole speculative
step (draft K tokens + verify K+1). `t_verify_ms` / `t_draft_ms` break it down when the source
measured them separately (specsched's own engine, the roofline model); imported vLLM runs carry only
the total. Acceptance is per draft position (conditional, see `planner.acceptance`) per context; it
does not depend on batch size. Serialization lives in `planner.profile_io`.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from specsched.errors import UserError

SCHEMA = "specsched.profile"
SCHEMA_VERSION = 2  # 2: optional per-request acceptance statistics
SUPPORTED_SCHEMA_VERSIONS = (1, 2)  # version 1 files load unchanged (no per-request fields)


class ProfileSource(str, Enum):
    ENGINE = "engine"  # specsched's reference engine (`specsched profile --engine`)
    VLLM_BENCH = "vllm-bench"  # imported `vllm bench serve` result files
    ROOFLINE = "roofline"  # analytic cost model, `planner.roofline`
    MANUAL = "manual"  # hand-written / other engines, documented format


@dataclass(frozen=True, slots=True)
class Stat:
    """A repeated measurement in ms: median, spread (IQR for specsched's own runs; std for vLLM
    imports; 0 for modelled values) and the number of repeats behind it."""

    median: float
    spread: float = 0.0
    n: int = 1

    def __post_init__(self) -> None:
        if not np.isfinite(self.median) or self.median <= 0:
            raise UserError(f"median must be a positive number of ms, got {self.median}")
        if not np.isfinite(self.spread) or self.spread < 0:
            raise UserError(f"spread must be >= 0, got {self.spread}")
        if self.n < 0:
            raise UserError(f"n must be >= 0, got {self.n}")

    @classmethod
    def from_samples(cls, samples_ms: Sequence[float], warmup: int = 0) -> Stat:
        """Median and interquartile range of `samples_ms` after dropping `warmup` leading ones."""
        kept = np.asarray(samples_ms[warmup:], dtype=np.float64)
        if kept.size == 0:
            raise ValueError(f"no samples left after {warmup} warm-up ones")
        q25, q50, q75 = np.percentile(kept, [25, 50, 75])
        return cls(float(q50), float(q75 - q25), int(kept.size))


@dataclass(frozen=True, slots=True)
class ProfileGrid:
    """Profile axes: sorted distinct batch sizes (>= 1), contexts (>= 1 token), K (0 first)."""

    batch_sizes: tuple[int, ...]
    contexts: tuple[int, ...]
    ks: tuple[int, ...]

    def __post_init__(self) -> None:
        for name, values, low in (
            ("batch_sizes", self.batch_sizes, 1),
            ("contexts", self.contexts, 1),
            ("ks", self.ks, 0),
        ):
            if not values:
                raise UserError(f"grid.{name}: must not be empty")
            if any(v < low for v in values):
                raise UserError(f"grid.{name}: every value must be >= {low}, got {list(values)}")
            if list(values) != sorted(set(values)):
                raise UserError(f"grid.{name}: must be sorted and distinct, got {list(values)}")
        if self.ks[0] != 0:
            raise UserError(
                f"grid.ks: must include K=0 (the no-spec baseline), got {list(self.ks)}"
            )

    @property
    def num_points(self) -> int:
        return len(self.batch_sizes) * len(self.contexts) * len(self.ks)


@dataclass(frozen=True, slots=True)
class ProfileMetadata:
    """Where the numbers come from. Free-form strings; `library_versions` maps name -> version."""

    model: str = "unknown"
    drafter: str = "unknown"
    dtype: str = "unknown"
    device: str = "unknown"
    threads: int | None = None
    source: ProfileSource = ProfileSource.MANUAL
    created: str = ""
    library_versions: dict[str, str] = field(default_factory=dict)
    notes: str = ""
    # query tokens per sequence the engine's attention packs into one vector (the step cost
    # model's tile term, `policy.cost`); None: unknown or no such kernel
    attention_q_tile: int | None = None


@dataclass(frozen=True, slots=True)
class TimingPoint:
    """T at one grid point. t_step_ms = plain step (K=0) or draft + verify (K>0)."""

    batch_size: int
    ctx: int
    k: int
    t_step_ms: Stat
    t_verify_ms: Stat | None = None
    t_draft_ms: Stat | None = None

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.batch_size, self.ctx, self.k)


def _rates_ok(values: Sequence[float], k: int) -> bool:
    return len(values) == k and all(0.0 <= x <= 1.0 for x in values)


@dataclass(frozen=True, slots=True)
class OutputSegment:
    """Pooled conditional acceptance of the drafts made while requests had generated `start`
    up to the next segment's start tokens, from `verifies` verifies."""

    start: int
    verifies: int
    a: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class HorizonCounts:
    """Each request's drafts and accepted drafts per prefix position ([requests][k], cumulative)
    over its first `tokens` generated tokens (`planner.acceptance_horizon`)."""

    tokens: int
    drafted: tuple[tuple[int, ...], ...]
    accepted: tuple[tuple[int, ...], ...]

    def check(self, k: int, where: str) -> None:
        """One-line UserError naming what is wrong, if anything."""
        here = f"{where}: horizon at {self.tokens} tokens"
        if self.tokens < 1:
            raise UserError(f"{here}: tokens must be >= 1")
        if len(self.drafted) != len(self.accepted):
            raise UserError(f"{here}: {len(self.drafted)} drafted rows but "
                            f"{len(self.accepted)} accepted rows")
        for i, (d, a) in enumerate(zip(self.drafted, self.accepted, strict=True)):
            if len(d) != k or len(a) != k:
                raise UserError(f"{here}: request {i} needs {k} drafted and {k} accepted counts")
            if any(x < 0 or y < 0 or y > x for x, y in zip(d, a, strict=True)):
                raise UserError(f"{here}: request {i} needs 0 <= accepted <= drafted, got "
                                f"drafted {list(d)} accepted {list(a)}")


@dataclass(frozen=True, slots=True)
class AcceptancePoint:
    """Conditional acceptance per draft position at context `ctx`, from `n` drafts (0: assumed).

    Optional per-request statistics (`planner.acceptance_ci`; schema_version 2), all per position:
    `requests` each measured request's conditional rates (what a workload simulation draws
    requests from, and what the planner's lower confidence bound is computed from);
    `spread` their standard deviation across requests; `ci_lo` / `ci_hi` the `ci_level`
    confidence interval of the mean (bootstrap over requests), as conditional rates whose
    running products are the bounds of the mean prefix rates: `expected_tokens(ci_lo, K)` is the
    lower bound of E[tokens/step] at every K (one position's conditional bound may exceed the
    mean's). `num_requests` = len(requests) when they are stored.

    `by_output` (optional): acceptance along a request's output — (start, verifies, a) per
    segment of generated tokens [start, next start), the drafts of all requests pooled, so a
    workload whose outputs are shorter or longer than the profile's is predicted with the
    acceptance of the positions it reaches (greedy text drifts into repetition: the SmolLM2
    profile's tokens 40-63 accepted 10-15 % more per verify than its first 40).

    `horizons` (optional): each request's cumulative counts after its first H generated tokens,
    every 16 tokens of the output (`HorizonCounts`): the planner's band over the horizon a
    workload reaches (`planner.acceptance_horizon`).

    `persistence` (optional): the split-half reliability of the requests' tokens per verify
    (`planner.acceptance_persistence`), the share of their measured spread that is their own
    rather than sampling noise; a simulation scales measured deviations by its square root.
    """

    ctx: int
    a: tuple[float, ...]
    n: int = 0
    num_requests: int = 0
    spread: tuple[float, ...] | None = None
    ci_lo: tuple[float, ...] | None = None
    ci_hi: tuple[float, ...] | None = None
    ci_level: float = 0.95
    requests: tuple[tuple[float, ...], ...] = ()
    by_output: tuple[OutputSegment, ...] = ()
    persistence: float | None = None
    horizons: tuple[HorizonCounts, ...] = ()

    def __post_init__(self) -> None:
        if self.ctx < 1:
            raise UserError(f"acceptance ctx must be >= 1, got {self.ctx}")
        if not self.a or any(not 0.0 <= x <= 1.0 for x in self.a):
            raise UserError(f"acceptance at ctx {self.ctx}: rates must be in [0, 1], got {self.a}")
        k, where = len(self.a), f"acceptance at ctx {self.ctx}"
        for name in ("spread", "ci_lo", "ci_hi"):
            values = getattr(self, name)
            if values is not None and not _rates_ok(values, k):
                raise UserError(f"{where}: {name} needs {k} values in [0, 1], got {values}")
        if not 0.0 < self.ci_level < 1.0:
            raise UserError(f"{where}: ci_level must be in (0, 1), got {self.ci_level}")
        for i, r in enumerate(self.requests):
            if not _rates_ok(r, k):
                raise UserError(f"{where}: requests[{i}] needs {k} rates in [0, 1], got {r}")
        if self.requests and self.num_requests != len(self.requests):
            raise UserError(f"{where}: num_requests is {self.num_requests} but "
                            f"{len(self.requests)} requests are stored")
        if self.num_requests < 0:
            raise UserError(f"{where}: num_requests must be >= 0, got {self.num_requests}")
        if self.persistence is not None and not 0.0 <= self.persistence <= 1.0:
            raise UserError(f"{where}: persistence must be in [0, 1], got {self.persistence}")
        starts = [seg.start for seg in self.by_output]
        if starts and (starts[0] != 0 or starts != sorted(set(starts))):
            raise UserError(f"{where}: by_output segments must start at 0 and increase, got "
                            f"starts {starts}")
        for seg in self.by_output:
            if not _rates_ok(seg.a, k) or seg.verifies < 1:
                raise UserError(f"{where}: by_output segment at {seg.start} needs {k} rates in "
                                f"[0, 1] and verifies >= 1")
        tokens = [h.tokens for h in self.horizons]
        if tokens != sorted(set(tokens)):
            raise UserError(f"{where}: horizons must increase in tokens, got {tokens}")
        for h in self.horizons:
            h.check(k, where)


# A timing unit (every K of one batch size x context) is noisy when the median over its Ks of
# the step time's relative interquartile range exceeds this: the engine profiler measures such
# a unit again, and the demo says which units stayed noisy (BENCHMARKS 2026-12-03, fourteenth
# stop: units at 18-25 % overstated speculation's cost by ~25 %; quiet ones read 3-11 %)
NOISY_REL_SPREAD = 0.12


def unit_noise(points: Sequence[TimingPoint]) -> float:
    """The median over a unit's Ks of the step time's relative interquartile range."""
    return statistics.median(p.t_step_ms.spread / p.t_step_ms.median for p in points)


@dataclass(frozen=True, slots=True)
class Profile:
    """A (possibly partial) profile. Points lie on the grid; no point twice."""

    metadata: ProfileMetadata
    grid: ProfileGrid
    timings: tuple[TimingPoint, ...] = ()
    acceptance: tuple[AcceptancePoint, ...] = ()  # sorted by ctx, distinct

    def __post_init__(self) -> None:
        g = self.grid
        seen: set[tuple[int, int, int]] = set()
        for i, p in enumerate(self.timings):
            if p.batch_size not in g.batch_sizes or p.ctx not in g.contexts or p.k not in g.ks:
                raise UserError(
                    f"timings[{i}] (batch {p.batch_size}, ctx {p.ctx}, K {p.k}) is not on the grid "
                    f"batch_sizes={list(g.batch_sizes)} contexts={list(g.contexts)} ks={list(g.ks)}"
                )
            if p.key in seen:
                raise UserError(
                    f"timings[{i}] (batch {p.batch_size}, ctx {p.ctx}, K {p.k}) is given twice"
                )
            seen.add(p.key)
        ctxs = [a.ctx for a in self.acceptance]
        if ctxs != sorted(set(ctxs)):
            raise UserError(f"acceptance: contexts must be sorted and distinct, got {ctxs}")

    def timing(self, batch_size: int, ctx: int, k: int) -> TimingPoint | None:
        for p in self.timings:
            if p.key == (batch_size, ctx, k):
                return p
        return None

    def noisy_units(self, threshold: float = NOISY_REL_SPREAD) -> list[tuple[int, int, float]]:
        """(batch size, context, `unit_noise`) of every timing unit noisier than `threshold`."""
        units: dict[tuple[int, int], list[TimingPoint]] = {}
        for p in self.timings:
            units.setdefault((p.batch_size, p.ctx), []).append(p)
        noise = {key: unit_noise(pts) for key, pts in sorted(units.items())}
        return [(b, c, n) for (b, c), n in noise.items() if n > threshold]

    def missing_points(self) -> list[tuple[int, int, int]]:
        """Grid points (batch, ctx, K) without a timing, in grid order."""
        have = {p.key for p in self.timings}
        g = self.grid
        return [
            (b, c, k)
            for c in g.contexts
            for b in g.batch_sizes
            for k in g.ks
            if (b, c, k) not in have
        ]

    def require_plannable(self, where: str = "profile") -> None:
        """One-line UserError unless every grid point is timed and acceptance covers max K."""
        missing = self.missing_points()
        if missing:
            b, c, k = missing[0]
            raise UserError(
                f"{where}: {len(missing)} of {self.grid.num_points} grid points have no timing "
                f"(first: batch {b}, ctx {c}, K {k}); finish the profile (it resumes) or drop that "
                f"value from the grid"
            )
        max_k = self.grid.ks[-1]
        if max_k > 0:
            if not self.acceptance:
                raise UserError(
                    f"{where}: no acceptance data; K > 0 needs acceptance per draft position "
                    f"(measure it, or give an assumed rate, e.g. --acceptance 0.8)"
                )
            short = [a.ctx for a in self.acceptance if len(a.a) < max_k]
            if short:
                raise UserError(
                    f"{where}: acceptance at ctx {short[0]} covers fewer than {max_k} draft "
                    f"positions (the largest K of the grid)"
                )
