"""Speculative-token schedules: K by batch size (3-item) or batch size x context (5-item).

No torch here. `parse_schedule` validates entries, `load_schedule` reads files / inline JSON,
`lint_schedule` reports legal-but-suspicious schedules, `export_*` writes engine configs,
`load_serving_spec` keeps the speculative-config fields written around a schedule.
"""

from __future__ import annotations

from specsched.errors import ScheduleError
from specsched.schedule.export import batch_only_projection, export_sglang, export_vllm
from specsched.schedule.lint import LintCode, LintWarning, lint_schedule
from specsched.schedule.load import load_schedule, read_schedule_source, schedule_from_obj
from specsched.schedule.model import INF, Bucket, Schedule
from specsched.schedule.parse import parse_schedule
from specsched.schedule.serving import ServingSpec, load_serving_spec, serving_spec_from_obj

__all__ = [
    "INF",
    "Bucket",
    "LintCode",
    "LintWarning",
    "Schedule",
    "ScheduleError",
    "ServingSpec",
    "batch_only_projection",
    "export_sglang",
    "export_vllm",
    "lint_schedule",
    "load_schedule",
    "load_serving_spec",
    "parse_schedule",
    "read_schedule_source",
    "schedule_from_obj",
    "serving_spec_from_obj",
]
