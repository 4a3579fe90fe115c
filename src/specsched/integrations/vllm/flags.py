"""The complete `vllm serve` flags that run a 2-D schedule in stock vLLM (no vLLM import).

`serve_flags` returns (flag, value) pairs: the speculative config with the coverage table (every
K the 2-D schedule emits, see `table.py`), the scheduler class, the schedule itself in
`--additional-config`, and `--max-num-seqs` (the table's pins are computed for it).
`render_flags` quotes them for a POSIX shell.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from specsched.integrations.vllm.config import VllmIntegrationConfig
from specsched.integrations.vllm.table import DEFAULT_MAX_NUM_SEQS, coverage_table
from specsched.policy.route import CtxAgg
from specsched.schedule import Schedule, export_vllm

SCHEDULER_CLS = "specsched.integrations.vllm.ContextAwareScheduler"


def speculative_config(
    s: Schedule,
    method: str = "ngram",
    model: str | None = None,
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS,
    project_ctx: int = 1,
) -> dict[str, Any]:
    """`--speculative-config` object: stock fields plus the coverage table for `max_num_seqs`."""
    config: dict[str, Any] = export_vllm(s, method=method, model=model)["speculative_config"]
    # num_speculative_tokens caps every K (vLLM clamps its lookup to it): the 2-D schedule's max.
    config["num_speculative_tokens"] = max(s.max_k if s.max_k is not None else s.max_emitted_k, 1)
    config["num_speculative_tokens_per_batch_size"] = coverage_table(s, max_num_seqs, project_ctx)
    return config


def serve_flags(
    s: Schedule,
    method: str = "ngram",
    model: str | None = None,
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS,
    project_ctx: int = 1,
    ctx_agg: CtxAgg = CtxAgg.MEAN,
    log_every: int = 0,
) -> list[tuple[str, str]]:
    """(flag, value) pairs for `vllm serve MODEL ...` running `s` with the scheduler class."""
    spec = speculative_config(s, method, model, max_num_seqs, project_ctx)
    additional = VllmIntegrationConfig(
        schedule=s, ctx_agg=ctx_agg, log_every=log_every
    ).to_additional_config()
    compact = {"separators": (",", ":")}
    return [
        ("--speculative-config", json.dumps(spec, **compact)),  # type: ignore[arg-type]
        ("--scheduler-cls", SCHEDULER_CLS),
        ("--additional-config", json.dumps(additional, **compact)),  # type: ignore[arg-type]
        ("--max-num-seqs", str(max_num_seqs)),
    ]


def render_flags(flags: list[tuple[str, str]]) -> str:
    """One shell line: `--flag 'value' ...` (values quoted with shlex)."""
    return " ".join(f"{flag} {shlex.quote(value)}" for flag, value in flags)
