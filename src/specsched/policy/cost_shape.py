"""What the linear step cost model misses where a profile measured: measured / fitted step time per
profiled (batch size, context, K), interpolated between the points (pure numpy).

The linear model of `cost` is one plane through every profiled point, and on this CPU the engine
is not linear: the rows of a step are nearly free while the weights dominate (B = 1 -> 4 at ctx
512: 47.5 -> 52.4 ms) and cost ~4x more per row once the matmuls turn compute-bound (B = 16:
121.6 ms), and a K = 1 step costs almost as much as K = 2 (B = 1: 72.9 vs 77.2 ms). The AVX-512
EPYC profile of 2026-12-05 fitted with 5.8 % relative RMS, but +10-13 % at B = 4 x ctx 512 for
K = 0..3 and +4-6 % for K = 4, 5: the adaptive policy, reading goodput off that plane, saw K = 4
as good as K = 2 where the steps measured K = 2 4.9 % better (the one-run grid: K = 2 / K = 4
walls 0.955, the policy at K = 4 on 62 of 140 steps, adaptive / best static 0.958).

`CostShape.ratios(B, ctx, K)` is the factor by which the profile's step at (B, ctx, K) exceeded
the fit's prediction, bilinear in (log B, log ctx) between profiled points and held at the
nearest one outside them (K beyond the profiled Ks: the deepest one's). The adaptive policy
multiplies its online model's uniform-K step times by it (`AdaptivePolicy.costs`), and divides
what it learns online by it, so the online model keeps correcting the level of the whole plane
(a machine slower today) while the shape stays the profile's.
No torch here.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

# a profiled point off the fit by more than this factor (either way) is clipped to it: a stalled
# profile step is not a shape
MAX_RATIO = 2.0


@dataclass(frozen=True, slots=True)
class CostShape:
    """log(measured / fitted) on a rectangular (batch size x context x K) grid; a point the
    profile lacks counts as on the fit (0)."""

    batch_sizes: tuple[int, ...]
    contexts: tuple[int, ...]
    ks: tuple[int, ...]
    log_ratio: tuple[tuple[tuple[float, ...], ...], ...]  # [B][ctx][k]
    _grid: np.ndarray = field(init=False, repr=False, compare=False)  # log_ratio as an array

    def __post_init__(self) -> None:
        for name, axis in (("batch_sizes", self.batch_sizes), ("contexts", self.contexts),
                           ("ks", self.ks)):
            if not axis or list(axis) != sorted(set(axis)) or axis[0] < (0 if name == "ks" else 1):
                raise ValueError(f"a cost shape's {name} must be increasing and positive, got "
                                 f"{axis}")
        grid = np.asarray(self.log_ratio, dtype=np.float64)
        if grid.shape != (len(self.batch_sizes), len(self.contexts), len(self.ks)):
            raise ValueError(f"a cost shape's log_ratio must be [{len(self.batch_sizes)}]"
                             f"[{len(self.contexts)}][{len(self.ks)}], got {grid.shape}")
        if not np.all(np.abs(grid) <= np.log(MAX_RATIO) + 1e-9):
            raise ValueError(f"a cost shape's ratios must lie within 1/{MAX_RATIO} .. "
                             f"{MAX_RATIO}")
        object.__setattr__(self, "_grid", grid)  # read every step (`ratios`)

    @classmethod
    def from_points(cls, points: Sequence[tuple[int, int, int, float]]) -> CostShape | None:
        """From (batch size, context, K, measured / fitted) per profiled point; None without
        points."""
        if not points:
            return None
        bs = sorted({p[0] for p in points})
        cs = sorted({p[1] for p in points})
        ks = sorted({p[2] for p in points})
        grid = np.zeros((len(bs), len(cs), len(ks)))  # [B, ctx, k]
        for b, c, k, r in points:
            ratio = min(max(float(r), 1.0 / MAX_RATIO), MAX_RATIO)
            grid[bs.index(b), cs.index(c), ks.index(k)] = np.log(ratio)
        return cls(tuple(bs), tuple(cs), tuple(ks),
                   tuple(tuple(tuple(float(v) for v in row) for row in plane) for plane in grid))

    def ratios(self, batch_size: int, ctx: int, max_k: int) -> np.ndarray:  # [max_k + 1]
        """measured / fitted for K = 0..max_k at (batch_size, ctx) (module doc)."""
        grid = self._grid  # [B, ctx, k]
        (i0, i1), u = _bracket(self.batch_sizes, batch_size)
        (j0, j1), v = _bracket(self.contexts, ctx)
        per_k = ((1 - u) * (1 - v) * grid[i0, j0] + (1 - u) * v * grid[i0, j1]
                 + u * (1 - v) * grid[i1, j0] + u * v * grid[i1, j1])  # [k]
        # K = 0..max_k: the profiled K at or below each (the shallowest above for K below all)
        idx = [max(0, bisect_right(self.ks, k) - 1) for k in range(max_k + 1)]
        return np.exp(per_k[idx])

    def to_json(self) -> dict[str, object]:
        return {"batch_sizes": list(self.batch_sizes), "contexts": list(self.contexts),
                "ks": list(self.ks),
                "log_ratio": [[list(row) for row in plane] for plane in self.log_ratio]}


def _bracket(axis: Sequence[int], x: int) -> tuple[tuple[int, int], float]:
    """The two axis indices around x and x's weight on the upper one, linear in log x (held at
    the ends)."""
    if x <= axis[0]:
        return (0, 0), 0.0
    if x >= axis[-1]:
        last = len(axis) - 1
        return (last, last), 0.0
    hi = bisect_right(axis, x)
    lo = hi - 1
    t = (np.log(x) - np.log(axis[lo])) / (np.log(axis[hi]) - np.log(axis[lo]))
    return (lo, hi), float(t)
