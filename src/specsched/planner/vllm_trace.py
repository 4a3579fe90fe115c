"""Acceptance per draft position per context, read from specsched's vLLM scheduler class.

Two sources carry the same counts (`specsched.integrations.vllm`, notes/vllm.md):
- the JSON-lines trace (`"trace"` in the integration config): each `"kind": "outcome"` record
  lists `[ctx, drafts, accepted]` per request that verified drafts; the `"kind": "schedule"`
  record (and the records' buckets) give the schedule's context ranges;
- the Prometheus text of vLLM's `/metrics`: `specsched_num_tested_tokens_per_pos_total`,
  `specsched_num_accepted_tokens_per_pos_total`, `specsched_num_drafts_total`,
  `specsched_draft_context_tokens_total`, labelled `bs_bucket`, `ctx_bucket`, `position`.
Per context range of the schedule, summed over batch ranges (acceptance does not depend on the
batch size in the planner's model): a_p = accepted_p / tested_p, where position p was *tested*
when it was drafted and positions 0..p-1 were accepted (unbiased with ragged K; Leviathan et al.
2023), for every position tested at least once; the point's context is the mean context of its
drafts. The result replaces a profile's acceptance (`with_acceptance`) or, alone, makes an
acceptance-only profile (no timings: `specsched plan` needs them from another source).
"""

from __future__ import annotations

import dataclasses
import json
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specsched.errors import UserError
from specsched.io import MiB, read_user_text
from specsched.planner.profile import (
    AcceptancePoint,
    Profile,
    ProfileGrid,
    ProfileMetadata,
    ProfileSource,
)

MAX_TRACE_BYTES = 512 * MiB  # a trace line per step: days of serving

METRIC = "specsched_"
_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


@dataclass(slots=True)
class _Counts:
    drafts: float = 0.0
    ctx_sum: float = 0.0
    tested: list[float] = field(default_factory=list)  # [positions]
    accepted: list[float] = field(default_factory=list)  # [positions]

    def at(self, pos: int) -> None:
        while len(self.tested) <= pos:
            self.tested.append(0.0)
            self.accepted.append(0.0)

    def add(self, ctx: int, drafts: int, accepted: int) -> None:
        """One request's verify: positions 0..min(drafts, accepted + 1) - 1 tested."""
        accepted = min(accepted, drafts)
        reach = min(drafts, accepted + 1)
        self.drafts += 1
        self.ctx_sum += ctx
        if reach > 0:
            self.at(reach - 1)
        for p in range(reach):
            self.tested[p] += 1
        for p in range(accepted):
            self.accepted[p] += 1


def acceptance_points(cells: dict[int, _Counts]) -> tuple[AcceptancePoint, ...]:
    """One point per context range with drafts: conditional acceptance per tested position."""
    points = []
    for c in cells.values():
        a = [acc / t for acc, t in zip(c.accepted, c.tested) if t > 0]
        if c.drafts > 0 and a:
            ctx = max(1, round(c.ctx_sum / c.drafts))
            points.append(AcceptancePoint(ctx, tuple(min(x, 1.0) for x in a), int(c.drafts)))
    return tuple(sorted(points, key=lambda p: p.ctx))


def acceptance_from_trace(path: str | Path) -> tuple[AcceptancePoint, ...]:
    """Acceptance points from the outcome records of a specsched vLLM trace (JSON lines)."""
    p = Path(path)
    lines = read_user_text(p, "vLLM trace", MAX_TRACE_BYTES).splitlines()
    records = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{p}: line {n}: invalid JSON: {exc.msg}") from None
        if isinstance(rec, dict) and rec.get("kind") in ("outcome", "schedule"):
            records.append((n, rec))
    los = sorted(_context_starts(p, records))
    cells: dict[int, _Counts] = {}
    for n, rec in records:
        if rec["kind"] != "outcome":
            continue
        for item in rec.get("requests") or []:
            if not (isinstance(item, list) and len(item) == 3
                    and all(isinstance(x, int) and x >= 0 for x in item)):
                raise UserError(f"{p}: line {n}: requests must be [ctx, drafts, accepted] triples "
                                "of integers >= 0")
            ctx, drafts, accepted = item
            lo = los[max(bisect_right(los, ctx) - 1, 0)]
            cells.setdefault(lo, _Counts()).add(ctx, drafts, accepted)
    points = acceptance_points(cells)
    if not points:
        raise UserError(
            f"{p}: no draft outcomes; is it a trace of specsched's vLLM scheduler class "
            "(`\"trace\"` in its config) from a run with K > 0?"
        )
    return points


def _context_starts(path: Path, records: list[tuple[int, dict[str, Any]]]) -> set[int]:
    """First context of every range named by the schedule records and the outcome buckets."""
    starts: set[int] = set()
    for n, rec in records:
        if rec["kind"] == "schedule":
            entries = rec.get("entries")
            if not isinstance(entries, list):
                raise UserError(f"{path}: line {n}: a schedule record needs its entries")
            starts.update(int(e[2]) for e in entries if isinstance(e, list) and len(e) == 5)
            continue
        bucket = rec.get("bucket")
        if not (isinstance(bucket, list) and len(bucket) == 4):
            raise UserError(f"{path}: line {n}: an outcome record needs a 4-item bucket")
        starts.add(int(bucket[2]))
    return starts or {1}


def metric_samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """(name, labels, value) of every specsched sample in Prometheus text exposition."""
    out = []
    for line in text.splitlines():
        m = _SAMPLE.match(line.strip())
        if m is None or not m.group(1).startswith(METRIC):
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        out.append((m.group(1), dict(_LABEL.findall(m.group(2) or "")), value))
    return out


def acceptance_from_metrics(path: str | Path) -> tuple[AcceptancePoint, ...]:
    """Acceptance points from a saved `/metrics` page (`curl -s host:port/metrics > FILE`)."""
    p = Path(path)
    text = read_user_text(p, "metrics page", MAX_TRACE_BYTES)
    cells: dict[int, _Counts] = {}
    for name, labels, value in metric_samples(text):
        base = name.removesuffix("_total")
        ctx_label = labels.get("ctx_bucket", "")
        try:
            lo = int(ctx_label.split("-", 1)[0])
        except ValueError:
            continue
        c = cells.setdefault(lo, _Counts())
        if base == f"{METRIC}num_drafts":
            c.drafts += value
        elif base == f"{METRIC}draft_context_tokens":
            c.ctx_sum += value
        elif base in (f"{METRIC}num_tested_tokens_per_pos", f"{METRIC}num_accepted_tokens_per_pos"):
            pos = int(labels.get("position", "0"))
            c.at(pos)
            column = c.tested if "tested" in base else c.accepted
            column[pos] += value
    points = acceptance_points(cells)
    if not points:
        raise UserError(
            f"{p}: no specsched_* acceptance counters; with a multi-process vLLM server export "
            "PROMETHEUS_MULTIPROC_DIR before `vllm serve` (notes/vllm.md), or use the trace"
        )
    return points


def with_acceptance(
    base: Profile | None, points: tuple[AcceptancePoint, ...], source: str
) -> Profile:
    """`base` with its acceptance replaced by `points`, or an acceptance-only profile."""
    note = f"acceptance from {source} (specsched vLLM scheduler class)"
    if base is not None:
        notes = f"{base.metadata.notes}; {note}" if base.metadata.notes else note
        meta = dataclasses.replace(base.metadata, notes=notes)
        return dataclasses.replace(base, metadata=meta, acceptance=points)
    max_k = max(len(p.a) for p in points)
    grid = ProfileGrid((1,), tuple(p.ctx for p in points), tuple(range(max_k + 1)))
    meta = ProfileMetadata(
        source=ProfileSource.MANUAL,
        notes=f"{note}; no timings: give a base profile (PROFILE.json, --from-vllm-bench, "
        "--roofline) to plan",
    )
    return Profile(meta, grid, (), points)
