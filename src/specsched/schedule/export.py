"""Export a schedule to the configs of stock serving engines (vLLM, SGLang).

vLLM (>= 0.24) knows only the batch-only table `num_speculative_tokens_per_batch_size`. A 5-item
schedule is projected onto it: each batch-size row takes the K of ONE context column, by default the
column holding `project_ctx` (default 1, the shortest contexts). Rationale: short contexts are where
speculation costs most (verify is compute-heavier relative to the KV read), and the context axis
exists to *raise* K for long contexts, so the short-context K is the conservative choice for a
server that cannot see context. The full 2-D behaviour needs specsched's vLLM integration.

SGLang's `--speculative-adaptive-config` is `{"<bs>": {"candidate_steps": [...]}}` keyed by the
lower bound of each batch-size slot; its controller adapts within the candidates by acceptance.
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


def export_sglang(s: Schedule) -> dict[str, Any]:
    """SGLang adaptive-spec config: per batch-size slot, the distinct Ks of its row."""
    config = {
        str(lo): {"candidate_steps": sorted(set(row))}
        for (lo, _), row in zip(s.batch_ranges, s.effective_grid)
    }
    notes: list[str] = []
    if not s.is_batch_only:
        notes.append(
            "stock SGLang has no context axis: each slot lists its row's Ks as candidates and the "
            "adaptive controller picks among them by acceptance, not by context"
        )
    if any(len(v["candidate_steps"]) == 1 for v in config.values()):
        notes.append("a slot with one candidate pins num_steps (no adaptation there)")
    return {"speculative_adaptive_config": config, "notes": notes}
