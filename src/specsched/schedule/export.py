"""Export a schedule to the configs of stock serving engines (vLLM, SGLang).

vLLM (>= 0.24) knows only the batch-only table `num_speculative_tokens_per_batch_size`. A 5-item
schedule is projected onto it: each batch-size row takes the K of ONE context column, by default the
column holding `project_ctx` (default 1, the shortest contexts). Rationale: short contexts are where
speculation costs most (verify is compute-heavier relative to the KV read), and the context axis
exists to *raise* K for long contexts, so the short-context K is the conservative choice for a
server that cannot see context. The full 2-D behaviour needs specsched's vLLM integration.

SGLang's `--speculative-adaptive-config` is `{"<bs>": {"candidate_steps": [...]}}` keyed by the
lower bound of each batch-size slot; its controller adapts within the candidates by acceptance.
The open SGLang PR #31716 adds a context axis: a slot may hold `"ctx_buckets": {"lo-hi": {...}}`
(1-indexed, inclusive, contiguous from 1 to 2^31-1; a bucket entry inherits the slot's keys). A
schedule with a context axis exports to that form, one candidate (its K) per bucket, adjacent
buckets of equal K merged; `context_axis=False` gives the stock form (the row's Ks as candidates).
"""

from __future__ import annotations

from typing import Any

from specsched.schedule.model import Schedule

CONTEXT_AXIS_NOTE = (
    "stock vLLM has no context axis: this batch-only projection uses the K of the context range "
    "holding ctx={ctx} for each batch-size range; for K by batch size x context run vLLM with "
    "specsched's scheduler class (specsched.integrations.vllm)"
)


def batch_only_projection(s: Schedule, project_ctx: int = 1) -> list[list[int]]:
    """3-item entries: for each batch-size range, the (clamped) K at context `project_ctx`."""
    col = s.col_for(project_ctx)
    return [[lo, hi, row[col]] for (lo, hi), row in zip(s.batch_ranges, s.effective_grid)]


def export_vllm(
    s: Schedule,
    method: str = "ngram",
    model: str | None = None,
    project_ctx: int = 1,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The `--speculative-config` JSON object for stock vLLM, plus notes when lossy."""
    table = batch_only_projection(s, project_ctx)
    max_in_table = max(k for _, _, k in table)
    num_spec = s.max_k if s.max_k is not None else max(max_in_table, 1)
    config: dict[str, Any] = {"method": method}
    if model is not None:
        config["model"] = model
    config["num_speculative_tokens"] = max(num_spec, 1)
    config["num_speculative_tokens_per_batch_size"] = table
    if extra:
        config.update(extra)
    notes: list[str] = []
    if not s.is_batch_only:
        notes.append(CONTEXT_AXIS_NOTE.format(ctx=project_ctx))
    if max_in_table == 0:
        notes.append("every K is 0: speculation is effectively off in this table")
    return {"speculative_config": config, "notes": notes}


def _ctx_buckets(s: Schedule, row: tuple[int, ...]) -> dict[str, dict[str, list[int]]]:
    """`"lo-hi"` -> one-candidate slot config, adjacent context ranges of equal K merged."""
    merged: list[list[int]] = []  # [ctx_lo, ctx_hi, K]
    for (lo, hi), k in zip(s.ctx_ranges, row):
        if merged and merged[-1][2] == k:
            merged[-1][1] = hi
        else:
            merged.append([lo, hi, k])
    return {f"{lo}-{hi}": {"candidate_steps": [k]} for lo, hi, k in merged}


def export_sglang(s: Schedule, context_axis: bool = True) -> dict[str, Any]:
    """SGLang adaptive-spec config: per batch-size slot, `ctx_buckets` (PR #31716) for a row whose
    K changes with context, else (and with `context_axis=False`) the row's distinct Ks."""
    config: dict[str, Any] = {}
    for (lo, _), row in zip(s.batch_ranges, s.effective_grid):
        if context_axis and len(set(row)) > 1:
            config[str(lo)] = {"ctx_buckets": _ctx_buckets(s, row)}
        else:
            config[str(lo)] = {"candidate_steps": sorted(set(row))}
    notes: list[str] = []
    if any("ctx_buckets" in v for v in config.values()):
        notes.append(
            "ctx_buckets needs SGLang with PR #31716 (context axis; its context representative "
            "is the median of seq_lens); `--mode stock` prints the form stock SGLang reads"
        )
    elif not s.is_batch_only:
        notes.append(
            "stock SGLang has no context axis: each slot lists its row's Ks as candidates and the "
            "adaptive controller picks among them by acceptance, not by context"
        )
    if any(len(v.get("candidate_steps", ())) == 1 for v in config.values()):
        notes.append("a slot with one candidate pins num_steps (no adaptation there)")
    return {"speculative_adaptive_config": config, "notes": notes}
