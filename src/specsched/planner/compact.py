"""Compaction: the per-cell K table -> at most N batch ranges x M context ranges.

Given scores S[r, c, k] (a cell's goodput with K = ks[k], relative to its own best, times the
cell's weight), choose contiguous row groups (<= N) and column groups (<= M) and one K per block to
maximize the total score, i.e. minimize goodput lost to merging. A block takes the K with the
largest block sum, except that K = 0 is kept unless the best K beats it by more than `min_gain`
(relative). For a fixed column partition the best row partition is an exact dynamic program
(O(R^2 N)); column partitions are enumerated exhaustively on the axis with fewer of them (exact),
or, past `MAX_ENUMERATED` partitions, improved by alternating row/column DPs (a local optimum).
Ties go to fewer ranges and smaller K.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

MAX_ENUMERATED = 20_000
_EPS = 1e-12

Groups = tuple[tuple[int, int], ...]  # inclusive index ranges, contiguous, covering 0..n-1


@dataclass(frozen=True, slots=True)
class Compaction:
    row_groups: Groups
    col_groups: Groups
    k_index: tuple[tuple[int, ...], ...]  # [row_group][col_group] -> index into ks
    score: float
    exact: bool

    def cell_k_index(self) -> np.ndarray:
        """[R, C] index into ks for every cell."""
        rows = self.row_groups[-1][1] + 1
        cols = self.col_groups[-1][1] + 1
        out = np.zeros((rows, cols), dtype=np.int64)
        for gi, (r0, r1) in enumerate(self.row_groups):
            for gj, (c0, c1) in enumerate(self.col_groups):
                out[r0 : r1 + 1, c0 : c1 + 1] = self.k_index[gi][gj]
        return out


def block_choice(sums: np.ndarray, zero: int, min_gain: float) -> tuple[np.ndarray, np.ndarray]:
    """Value and K index per block. sums: [..., num_k] block score sums; `zero` = index of K=0."""
    best = np.argmax(sums, axis=-1)  # [...]; first max -> smallest K on ties
    best_val = np.take_along_axis(sums, best[..., None], axis=-1)[..., 0]
    zero_val = sums[..., zero]
    keep_zero = best_val <= zero_val * (1.0 + min_gain) + _EPS * np.abs(zero_val)
    idx = np.where(keep_zero, zero, best)
    return np.where(keep_zero, zero_val, best_val), idx


def _groups_from_cuts(cuts: tuple[int, ...], n: int) -> Groups:
    bounds = (0, *cuts, n)
    return tuple((bounds[i], bounds[i + 1] - 1) for i in range(len(bounds) - 1))


def _row_dp(
    scores: np.ndarray, col_groups: Groups, max_rows: int, zero: int, min_gain: float
) -> tuple[float, Groups]:
    """Best row partition (<= max_rows groups) for fixed column groups. scores: [R, C, num_k]."""
    num_rows = scores.shape[0]
    agg = np.stack([scores[:, c0 : c1 + 1].sum(axis=1) for c0, c1 in col_groups], axis=1)  # [R,G,K]
    prefix = np.concatenate([np.zeros((1, *agg.shape[1:])), np.cumsum(agg, axis=0)])  # [R+1,G,K]
    diff = prefix[None, :, :, :] - prefix[:, None, :, :]  # [i, j, G, K]: rows i..j-1
    value = block_choice(diff, zero, min_gain)[0].sum(axis=-1)  # [R+1, R+1]
    neg = -math.inf
    f = np.full((max_rows + 1, num_rows + 1), neg)
    arg = np.zeros((max_rows + 1, num_rows + 1), dtype=np.int64)
    f[0, 0] = 0.0
    for n in range(1, max_rows + 1):
        for j in range(1, num_rows + 1):
            cand = f[n - 1, :j] + value[:j, j]  # [j]
            i = int(np.argmax(cand))
            f[n, j], arg[n, j] = cand[i], i
    best_n = 1
    for n in range(2, max_rows + 1):  # more groups only for a real improvement
        if f[n, num_rows] > f[best_n, num_rows] + _EPS * max(1.0, abs(f[best_n, num_rows])):
            best_n = n
    cuts: list[int] = []
    j, n = num_rows, best_n
    while n > 0:
        i = int(arg[n, j])
        if i > 0:
            cuts.append(i)
        j, n = i, n - 1
    return float(f[best_n, num_rows]), _groups_from_cuts(tuple(sorted(cuts)), num_rows)


def _num_partitions(n: int, max_groups: int) -> int:
    return sum(math.comb(n - 1, g - 1) for g in range(1, min(max_groups, n) + 1))


def _merge_equal(groups: Groups, labels: list[tuple[int, ...]]) -> Groups:
    out: list[tuple[int, int]] = []
    last: tuple[int, ...] | None = None
    for g, lab in zip(groups, labels):
        if out and lab == last:
            out[-1] = (out[-1][0], g[1])
        else:
            out.append(g)
        last = lab
    return tuple(out)


def _finish(
    scores: np.ndarray, rows: Groups, cols: Groups, zero: int, min_gain: float, exact: bool
) -> Compaction:
    def kgrid(rg: Groups, cg: Groups) -> list[tuple[int, ...]]:
        sums = np.array(
            [[scores[r0 : r1 + 1, c0 : c1 + 1].sum(axis=(0, 1)) for c0, c1 in cg] for r0, r1 in rg]
        )  # [N, M, K]
        return [tuple(int(x) for x in row) for row in block_choice(sums, zero, min_gain)[1]]

    grid = kgrid(rows, cols)
    rows = _merge_equal(rows, grid)
    grid = kgrid(rows, cols)
    cols = _merge_equal(cols, [tuple(r[j] for r in grid) for j in range(len(cols))])
    grid = kgrid(rows, cols)
    sums = np.array(
        [[scores[r0 : r1 + 1, c0 : c1 + 1].sum(axis=(0, 1)) for c0, c1 in cols] for r0, r1 in rows]
    )
    score = float(block_choice(sums, zero, min_gain)[0].sum())
    return Compaction(rows, cols, tuple(grid), score, exact)


def compact(
    scores: np.ndarray,
    max_rows: int,
    max_cols: int,
    zero: int = 0,
    min_gain: float = 0.0,
    max_enumerated: int = MAX_ENUMERATED,
) -> Compaction:
    """Best <= max_rows x max_cols rectangular grouping of scores [R, C, num_k] (see module doc)."""
    if scores.ndim != 3 or 0 in scores.shape:
        raise ValueError(
            f"scores must be a non-empty [rows, cols, num_k] array, got {scores.shape}"
        )
    if max_rows < 1 or max_cols < 1:
        raise ValueError("max_rows and max_cols must be >= 1")
    num_rows, num_cols, _ = scores.shape
    n_col_parts = _num_partitions(num_cols, max_cols)
    n_row_parts = _num_partitions(num_rows, max_rows)
    transposed = n_row_parts < n_col_parts
    s = scores.transpose(1, 0, 2) if transposed else scores
    dp_max, enum_max = (max_cols, max_rows) if transposed else (max_rows, max_cols)
    n_enum = s.shape[1]
    best: tuple[float, Groups, Groups] | None = None
    exact = min(n_col_parts, n_row_parts) <= max_enumerated
    if exact:
        for g in range(1, min(enum_max, n_enum) + 1):
            for cuts in itertools.combinations(range(1, n_enum), g - 1):
                cg = _groups_from_cuts(cuts, n_enum)
                val, rg = _row_dp(s, cg, dp_max, zero, min_gain)
                if best is None or val > best[0] + _EPS * max(1.0, abs(best[0])):
                    best = (val, rg, cg)
    else:  # alternate exact DPs from an even split until no improvement
        step = n_enum / min(enum_max, n_enum)
        cg = _groups_from_cuts(
            tuple(sorted({round(step * i) for i in range(1, min(enum_max, n_enum))})), n_enum
        )
        val, rg = _row_dp(s, cg, dp_max, zero, min_gain)
        best = (val, rg, cg)
        for _ in range(50):
            _, cg = _row_dp(s.transpose(1, 0, 2), best[1], enum_max, zero, min_gain)
            val_r, rg = _row_dp(s, cg, dp_max, zero, min_gain)
            if val_r <= best[0] + _EPS * max(1.0, abs(best[0])):
                break
            best = (val_r, rg, cg)
    assert best is not None
    _, rg, cg = best
    rows, cols = (cg, rg) if transposed else (rg, cg)
    return _finish(scores, rows, cols, zero, min_gain, exact)
