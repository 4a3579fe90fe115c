"""Run a 2-D speculative-token schedule (K by batch size x context) in unmodified vLLM.

Stock vLLM (>= 0.24) only knows the batch-only table `num_speculative_tokens_per_batch_size`.
This package adds the context axis out of tree:

- `ContextAwareScheduler` (for `--scheduler-cls specsched.integrations.vllm.ContextAwareScheduler`;
  becomes `AsyncContextAwareScheduler` under async scheduling) overrides
  `_update_after_schedule` to set `SchedulerOutput.num_spec_tokens_to_schedule` from
  `specsched.policy.route.route` (batch size, decode-only pool, `ctx_agg` representative).
- The 5-item schedule and `ctx_agg` travel in `--additional-config '{"specsched": {...}}'`
  (`config.py`), validated at engine start with one-line errors.
- The speculative config still carries a batch-only table holding every K the 2-D schedule can
  emit (`table.coverage_table`: stock projection + each K pinned at its widest batch size), which
  turns on vLLM's dynamic-K path (no draft padding, graphs captured per K).
- Each step's K is logged at debug level and counted (`usage.KUsage`; summaries at info level
  every `log_every` steps and at shutdown; optional JSON-lines `trace`).
- After each step the accepted drafts are read back per request (`outcomes.py`) and go to the
  policy's `observe`, per-cell Prometheus counters (`metrics.py`) and the trace; a model runner
  known to ignore K is refused at start (`runner.py`).
- `"policy": "adaptive"` runs the closed-loop policy (`adaptive.py`): the schedule is its prior,
  one K per step, every K in 0..max_k in the table; what it learned is logged and written frozen.
- Supported vLLM versions: `version.supported_range_text()`; others fail with one line.

Importing this package does not import vLLM; the scheduler classes load it on first access.
"""

from __future__ import annotations

from typing import Any

from specsched.integrations.vllm.config import (
    ADDITIONAL_CONFIG_KEY,
    VllmIntegrationConfig,
    config_from_additional,
    config_from_obj,
)
from specsched.integrations.vllm.flags import SCHEDULER_CLS, serve_flags
from specsched.integrations.vllm.table import coverage_table, missing_from_lookup
from specsched.integrations.vllm.version import (
    check_vllm_version,
    installed_vllm_version,
    supported_range_text,
)

_LAZY = ("ContextAwareScheduler", "AsyncContextAwareScheduler")

__all__ = [
    "ADDITIONAL_CONFIG_KEY",
    "SCHEDULER_CLS",
    "VllmIntegrationConfig",
    "check_vllm_version",
    "config_from_additional",
    "config_from_obj",
    "coverage_table",
    "installed_vllm_version",
    "missing_from_lookup",
    "serve_flags",
    "supported_range_text",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    """Load the vLLM-backed scheduler classes on first access (PEP 562)."""
    if name in _LAZY:
        from specsched.integrations.vllm import scheduler

        return getattr(scheduler, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
