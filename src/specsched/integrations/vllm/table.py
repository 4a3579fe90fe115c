"""The batch-only table vLLM must still be given when the 2-D scheduler class chooses K.

Why a table at all: vLLM only turns on its dynamic-K machinery when
`num_speculative_tokens_per_batch_size` is set. With it, the scheduler stops padding decode
requests to `num_speculative_tokens` drafts (`Scheduler.schedule`: padding only when
`dynamic_sd_lookup is None`), the v2 model runner captures decode CUDA graphs for every K found
in the dense table, and the v1 runner's capture sizes get one decode tier per K that reaches the
widest batch size mapped to that K (`VllmConfig`'s capture-size setup). A K the 2-D schedule emits
but the table lacks would run uncaptured (slow), so the table must contain every emitted K.

The table (`coverage_table`) is built in three steps over batch sizes 1..max_num_seqs:
1. Start from the stock projection: each batch-size row takes its K at context `project_ctx`
   (`specsched.schedule.batch_only_projection`), so a server run without the scheduler class
   still gets the conservative short-context K almost everywhere.
2. For every K the 2-D schedule can emit (after the `num_speculative_tokens` clamp) at some batch
   size <= max_num_seqs, find its *reach*: the widest batch size at which it is emitted.
3. Pin each K at the highest batch size <= its reach not yet pinned (widest reach first; a K
   already sitting there keeps it). Every emitted K is then in the table, at (or a few sizes
   below) its reach, which gives the v1 capture tiers their widest coverage, while the stock
   fallback changes at no more than one batch size per distinct K.
The pins depend on max_num_seqs, so `specsched export` prints `--max-num-seqs` with the table and
the scheduler class re-checks coverage against the real dense lookup at engine start.
"""

from __future__ import annotations

from collections.abc import Iterable

from specsched.errors import ScheduleError
from specsched.schedule import Schedule, batch_only_projection

DEFAULT_MAX_NUM_SEQS = 256  # vLLM's default on most GPUs for `vllm serve`; CPU uses 128
# The table has one entry per batch size: a bound far above any real batch (the engine's too)
MAX_TABLE_NUM_SEQS = 65_536


def dense_from_entries(entries: list[list[int]], max_num_seqs: int, cap: int) -> list[int]:
    """Dense bs -> K list (index 0 unused) with vLLM's semantics: ranges sorted by start, gaps
    inherit the previous K, the tail the last K, every K clamped to `cap`."""
    dense = [0] * (max_num_seqs + 1)
    last_k: int | None = None
    nxt = 1
    for lo, hi, k in sorted(entries):
        for bs in range(nxt, min(lo, max_num_seqs + 1)):
            dense[bs] = min(cap, last_k if last_k is not None else k)
        for bs in range(max(lo, nxt), min(hi, max_num_seqs) + 1):
            dense[bs] = min(cap, k)
        nxt = max(nxt, hi + 1)
        last_k = k
    for bs in range(nxt, max_num_seqs + 1):
        dense[bs] = min(cap, last_k if last_k is not None else 0)
    return dense


def entries_from_dense(dense: list[int]) -> list[list[int]]:
    """Run-length 3-item entries [bs_lo, bs_hi, K] covering 1..len(dense)-1."""
    out: list[list[int]] = []
    for bs in range(1, len(dense)):
        if out and out[-1][2] == dense[bs]:
            out[-1][1] = bs
        else:
            out.append([bs, bs, dense[bs]])
    return out


def emitted_reach(s: Schedule, max_num_seqs: int) -> dict[int, int]:
    """K -> widest batch size (<= max_num_seqs) at which the schedule (clamped) emits it."""
    reach: dict[int, int] = {}
    rows = list(zip(s.batch_ranges, s.effective_grid))
    for i, ((lo, hi), row) in enumerate(rows):
        if lo > max_num_seqs:
            break
        nxt_lo = rows[i + 1][0][0] if i + 1 < len(rows) else max_num_seqs + 1
        top = min(max(hi, nxt_lo - 1), max_num_seqs)  # gaps and the tail inherit this row
        for k in row:
            reach[k] = max(reach.get(k, 0), top)
    return reach


def coverage_table(s: Schedule, max_num_seqs: int, project_ctx: int = 1,
                   any_batch_ks: Iterable[int] = ()) -> list[list[int]]:
    """3-item entries for `num_speculative_tokens_per_batch_size` holding every K the 2-D
    schedule can emit at batch sizes 1..max_num_seqs (see the module docstring), and every K of
    `any_batch_ks` (a closed-loop policy may choose them at any batch size: their reach is
    max_num_seqs, so they are pinned at the widest free batch sizes)."""
    if max_num_seqs < 1:
        raise ScheduleError(f"max_num_seqs must be >= 1, got {max_num_seqs}")
    extra = set(any_batch_ks)
    cap = max(s.max_emitted_k if s.max_k is None else s.max_k, *extra, 0)
    dense = dense_from_entries(batch_only_projection(s, project_ctx), max_num_seqs, cap)
    reach = emitted_reach(s, max_num_seqs)
    reach.update(dict.fromkeys(extra, max_num_seqs))
    pinned: set[int] = set()
    order = sorted(reach, key=lambda k: (-reach[k], dense[reach[k]] != k, k))
    for k in order:
        bs = reach[k]
        while bs in pinned:
            bs -= 1
        if bs < 1:
            raise ScheduleError(
                f"the schedule emits {len(reach)} distinct K at batch sizes <= {reach[k]}, more "
                f"than vLLM's batch-only table can hold there; use fewer distinct K or a larger "
                f"--max-num-seqs"
            )
        dense[bs] = k
        pinned.add(bs)
    return entries_from_dense(dense)


def missing_from_lookup(s: Schedule, dense_lookup: list[int]) -> list[int]:
    """Ks the (clamped) schedule can emit at batch sizes 1..len(dense_lookup)-1 that vLLM's dense
    lookup (`Scheduler.dynamic_sd_lookup`) never holds: those steps would run uncaptured."""
    have = set(dense_lookup[1:])
    return sorted(set(emitted_reach(s, len(dense_lookup) - 1)) - have)
