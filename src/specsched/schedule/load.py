"""Read a schedule from the shapes users have: a list, a wrapper dict, a vLLM speculative config;
from a JSON/YAML file or an inline JSON string. File I/O lives here, not in the dataclass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from specsched.errors import ScheduleError
from specsched.schedule.model import Schedule
from specsched.schedule.parse import parse_schedule

# Keys that may hold the entries, in the order they are looked for.
SCHEDULE_KEYS: tuple[str, ...] = (
    "speculative_token_schedule",
    "num_speculative_tokens_per_batch_size",
    "schedule",
)


def schedule_from_obj(obj: Any, max_k: int | None = None) -> Schedule:
    """Accept a bare list, `{"speculative_token_schedule": [...]}`, or a vLLM speculative config
    (`num_speculative_tokens_per_batch_size` / `speculative_token_schedule`, with
    `num_speculative_tokens` used as max_k). An explicit `max_k` wins over the config's."""
    if isinstance(obj, list):
        return parse_schedule(obj, max_k)
    if isinstance(obj, dict):
        for key in ("speculative_config", "specsched"):
            if key in obj and isinstance(obj[key], dict) and not _has_schedule_key(obj):
                return schedule_from_obj(obj[key], max_k)
        for key in SCHEDULE_KEYS:
            if key in obj:
                cap = max_k if max_k is not None else obj.get("num_speculative_tokens")
                return parse_schedule(obj[key], cap)
        raise ScheduleError(
            f"schedule: no schedule found; expected a list or an object with one of "
            f"{', '.join(SCHEDULE_KEYS)} (got keys: {', '.join(map(str, obj)) or 'none'})"
        )
    raise ScheduleError(f"schedule: expected a list or an object, got {type(obj).__name__}")


def _has_schedule_key(obj: dict[str, Any]) -> bool:
    return any(k in obj for k in SCHEDULE_KEYS)


def read_schedule_source(source: str | Path) -> Any:
    """Decode a schedule source into Python data: an inline JSON string (starting with `[` or `{`),
    else a path to a .json / .yaml / .yml file."""
    text = str(source).strip()
    if text.startswith(("[", "{")):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScheduleError(
                f"inline schedule: invalid JSON: {exc.msg} at char {exc.pos}"
            ) from None
    path = Path(text)
    if not path.exists():
        raise ScheduleError(f"{path}: no such file (give a JSON/YAML file or an inline JSON list)")
    if path.is_dir():
        raise ScheduleError(f"{path}: is a directory, expected a JSON or YAML file")
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScheduleError(f"{path}: cannot read: {exc}") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            return yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            line = getattr(getattr(exc, "problem_mark", None), "line", None)
            where = f" at line {line + 1}" if line is not None else ""
            raise ScheduleError(f"{path}: invalid YAML{where}") from None
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ScheduleError(f"{path}: invalid JSON: {exc.msg} at line {exc.lineno}") from None


def load_schedule(source: str | Path, max_k: int | None = None) -> Schedule:
    """Load and validate a schedule from a file path or an inline JSON string."""
    return schedule_from_obj(read_schedule_source(source), max_k)
