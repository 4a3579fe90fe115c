"""Import `vllm bench serve --save-result` files into a `Profile`: T = median ITL per (B, K).

What a result file holds (vllm/benchmarks/serve.py): one JSON object per run (several, one per
line, with `--append-result`): `max_concurrency`, `model_id`, `label`, `completed`,
`total_input_tokens`, `total_output_tokens`, `median_itl_ms`, `std_itl_ms`, and for speculative
servers `spec_decode_acceptance_length`, `spec_decode_per_position_acceptance_rates` (prefix
rates), `spec_decode_num_drafts`; `--metadata KEY=VALUE` pairs land as top-level string keys.

How a run maps onto the grid:
- batch size = `max_concurrency` (else `concurrency<N>` in the file name). Run long enough that the
  server really holds that many requests; ramp-up and tail dilute it.
- K = the `k` argument, else metadata `num_speculative_tokens` / `num_spec_tokens` / `k` (pass
  `--metadata k=4` to vllm bench serve), else `k<N>` / `K<N>` as a word in the label or file name
  (`spec-k4-...json`). K = 0 runs (no --speculative-config) are the no-spec baseline; needed.
- step time = `median_itl_ms`: vLLM streams all tokens of one step in one chunk, so ITL is the time
  per engine step (draft + verify), as in vLLM DSD's profiler (goodput = (1 + sum a) / ITL).
- context = the `ctx` argument, else metadata `ctx`, else mean input + half the mean output
  tokens; contexts within 10% of each other are merged (their median).
- acceptance per context: from the per-position prefix rates of the K > 0 runs (weighted by
  drafts; a position uses the runs that drafted it), else from `spec_decode_acceptance_length`
  as a constant rate, else the `acceptance` argument.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specsched.errors import UserError
from specsched.io import MiB, read_user_text
from specsched.planner.acceptance import (
    conditional_from_prefix_rates,
    constant_acceptance_for_length,
)
from specsched.planner.profile import (
    AcceptancePoint,
    Profile,
    ProfileGrid,
    ProfileMetadata,
    ProfileSource,
    Stat,
    TimingPoint,
)

_K_KEYS = ("num_speculative_tokens", "num_spec_tokens", "k")
_K_WORD = re.compile(r"(?:^|[-_.\s])[kK](\d+)(?=$|[-_.\s])")
_CONC_WORD = re.compile(r"concurrency(\d+)")


@dataclass(frozen=True, slots=True)
class VllmRun:
    source: str
    batch_size: int
    k: int
    ctx: int
    itl_ms: Stat
    prefix_rates: tuple[float, ...]  # P(first i drafts accepted), i = 1..K
    num_drafts: int
    acceptance_length: float | None
    model: str


def read_result_objects(path: str | Path) -> list[dict[str, Any]]:
    """All runs in a result file: one JSON object, or one per line (--append-result)."""
    p = Path(path)
    text = read_user_text(p, "vLLM bench result", 64 * MiB)
    try:
        obj = json.loads(text)
        objs = obj if isinstance(obj, list) else [obj]
    except json.JSONDecodeError:
        objs = []
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    objs.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise UserError(f"{p}: line {n}: invalid JSON: {exc.msg}") from None
    if not objs or not all(isinstance(o, dict) for o in objs):
        raise UserError(f"{p}: not a `vllm bench serve` result file (expected JSON objects)")
    return objs


def _int_of(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def parse_run(
    obj: dict[str, Any], source: str, k: int | None = None, ctx: int | None = None
) -> VllmRun:
    """One result object -> a VllmRun (see the module doc for where each field comes from)."""
    name = Path(source.split("#")[0]).name
    if "median_itl_ms" not in obj:
        raise UserError(f"{source}: no median_itl_ms; run vllm bench serve with --save-result")
    batch = _int_of(obj.get("max_concurrency"))
    if batch is None and (m := _CONC_WORD.search(name)):
        batch = int(m.group(1))
    if batch is None or batch < 1:
        raise UserError(
            f"{source}: no max_concurrency; run vllm bench serve with --max-concurrency N"
        )
    if k is None:
        for key in _K_KEYS:
            if key in obj and (k := _int_of(obj[key])) is not None:
                break
    for text in (str(obj.get("label") or ""), name):
        if k is None and (m := _K_WORD.search(text)):
            k = int(m.group(1))
    if k is None or k < 0:
        raise UserError(
            f"{source}: cannot tell K; pass --k, or --metadata k=N to vllm bench serve, or put "
            f"k<N> in the file name"
        )
    if ctx is None:
        ctx = _int_of(obj.get("ctx"))
    done = int(obj.get("completed") or 0)
    if ctx is None:
        if done < 1:
            raise UserError(
                f"{source}: no completed requests; cannot derive the context (give --ctx)"
            )
        ctx = round(
            (obj.get("total_input_tokens", 0) + obj.get("total_output_tokens", 0) / 2) / done
        )
    itl = float(obj["median_itl_ms"])
    if not itl > 0:
        raise UserError(f"{source}: median_itl_ms must be > 0, got {itl}")
    rates = obj.get("spec_decode_per_position_acceptance_rates") or []
    length = obj.get("spec_decode_acceptance_length")
    return VllmRun(
        source=source,
        batch_size=batch,
        k=k,
        ctx=max(int(ctx), 1),
        itl_ms=Stat(itl, float(obj.get("std_itl_ms") or 0.0), done),
        prefix_rates=tuple(float(r) for r in rates)[:k] if k else (),
        num_drafts=int(obj.get("spec_decode_num_drafts") or 0),
        acceptance_length=float(length) if length and k else None,
        model=str(obj.get("model_id") or "unknown"),
    )


def _merge_contexts(ctxs: Sequence[int], tol: float = 0.10) -> dict[int, int]:
    """Map each context to a representative: clusters within `tol` (relative) of their first."""
    out: dict[int, int] = {}
    cluster: list[int] = []
    for c in [*sorted(set(ctxs)), None]:
        if cluster and (c is None or c > cluster[0] * (1 + tol)):
            rep = int(np.median(cluster))
            out.update({x: rep for x in cluster})
            cluster = []
        if c is not None:
            cluster.append(c)
    return out


def _acceptance(
    runs: list[VllmRun], max_k: int, fallback: tuple[float, ...] | None
) -> tuple[float, ...] | None:
    spec = [r for r in runs if r.k > 0]
    if any(r.prefix_rates for r in spec):
        prefix: list[float] = []
        for i in range(max_k):
            use = [r for r in spec if len(r.prefix_rates) > i and r.num_drafts > 0]
            if not use:
                break
            w = np.array([r.num_drafts for r in use], dtype=float)
            prefix.append(float(np.dot(w, [r.prefix_rates[i] for r in use]) / w.sum()))
        if len(prefix) >= max_k:
            return conditional_from_prefix_rates(prefix)
    lengths = [r for r in spec if r.acceptance_length]
    if lengths:
        a = float(
            np.mean(
                [constant_acceptance_for_length(r.acceptance_length or 1.0, r.k) for r in lengths]
            )
        )
        return (a,) * max_k
    if fallback:
        return fallback * max_k if len(fallback) == 1 else fallback
    return None


def profile_from_runs(
    runs: Sequence[VllmRun],
    acceptance: tuple[float, ...] | None = None,
    metadata: ProfileMetadata | None = None,
) -> Profile:
    """Group runs onto a (concurrency x context x K) grid; a point run several times gets the
    median of the runs' medians. The grid may have holes: `Profile.require_plannable` names them."""
    if not runs:
        raise UserError("no vllm bench serve runs given")
    rep = _merge_contexts([r.ctx for r in runs])
    grouped: dict[tuple[int, int, int], list[VllmRun]] = {}
    for r in runs:
        grouped.setdefault((r.batch_size, rep[r.ctx], r.k), []).append(r)
    grid = ProfileGrid(
        tuple(sorted({key[0] for key in grouped})),
        tuple(sorted({key[1] for key in grouped})),
        tuple(sorted({0, *(key[2] for key in grouped)})),
    )
    timings = []
    for (b, c, k), group in sorted(grouped.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
        meds = [g.itl_ms.median for g in group]
        spread = float(np.median([g.itl_ms.spread for g in group]))
        timings.append(
            TimingPoint(
                b, c, k, Stat(float(np.median(meds)), spread, sum(g.itl_ms.n for g in group))
            )
        )
    acc: list[AcceptancePoint] = []
    max_k = grid.ks[-1]
    if max_k > 0:
        for c in grid.contexts:
            a = _acceptance([r for r in runs if rep[r.ctx] == c], max_k, acceptance)
            if a is None:
                raise UserError(
                    f"no acceptance for context {c}: the K > 0 runs carry no spec_decode_* fields; "
                    f"give an assumed rate (--acceptance 0.8)"
                )
            n = sum(r.num_drafts for r in runs if rep[r.ctx] == c)
            acc.append(AcceptancePoint(c, tuple(a[:max_k]), n))
    models = sorted({r.model for r in runs})
    meta = metadata or ProfileMetadata(
        model=", ".join(models),
        source=ProfileSource.VLLM_BENCH,
        notes="imported from vllm bench serve: t_step_ms = median ITL (spread = std ITL); "
        + "files: "
        + ", ".join(sorted({Path(r.source).name for r in runs})),
    )
    return Profile(meta, grid, tuple(timings), tuple(acc))


def import_vllm_bench(
    paths: Sequence[str | Path],
    k: int | None = None,
    ctx: int | None = None,
    acceptance: tuple[float, ...] | None = None,
    metadata: ProfileMetadata | None = None,
) -> Profile:
    """Read result files (JSON or JSON lines) and build a Profile from all runs in them."""
    runs: list[VllmRun] = []
    for path in paths:
        objs = read_result_objects(path)
        for i, obj in enumerate(objs):
            src = str(path) if len(objs) == 1 else f"{path}#{i + 1}"
            runs.append(parse_run(obj, src, k, ctx))
    return profile_from_runs(runs, acceptance, metadata)
