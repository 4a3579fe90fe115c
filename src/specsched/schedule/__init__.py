"""Speculative-token schedules: K by batch size (3-item) or batch size x context (5-item).

No torch here. `parse_schedule` validates entries, `load_schedule` reads files / inline JSON,
`lint_schedule` reports legal-but-suspicious schedules, `export_*` writes engine configs.
"""

from __future__ import annotations

from specsched.errors import ScheduleError
from specsched.schedule.export import batch_only_projection, export_sglang, export_vllm
from specsched.schedule.lint import LintCode, LintWarning, lint_schedule
from specsched.schedule.load import load_schedule, read_schedule_source, schedule_from_obj
from specsched.schedule.model import CTX_INF, Bucket, Schedule
from specsched.schedule.parse import parse_schedule

__all__ = [
    "CTX_INF",
    "Bucket",
    "LintCode",
    "LintWarning",
    "Schedule",
    "ScheduleError",
    "batch_only_projection",
    "export_sglang",
    "export_vllm",
    "lint_schedule",
    "load_schedule",
    "parse_schedule",
    "read_schedule_source",
    "schedule_from_obj",
]
