"""Read a schedule from the shapes users have: a list, a wrapper dict, a vLLM speculative config;
from a JSON/YAML file or an inline JSON string. File I/O lives here, not in the dataclass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specsched.errors import ScheduleError, UserError
from specsched.io import (
    MiB,
    parse_data_text,
    parse_json_text,
    read_user_text,
    show_text,
    show_value,
)
from specsched.schedule.model import Schedule
from specsched.schedule.parse import parse_schedule

# A 100 x 100 grid of 5-item entries is ~0.3 MiB as JSON.
MAX_SCHEDULE_BYTES = 4 * MiB
# YAML is composed into a node graph first (~0.5 KB a value): 1 MiB of YAML is ~0.3 GB and ~5 s
MAX_YAML_SCHEDULE_BYTES = 1 * MiB
MAX_PATH_CHARS = 4096  # Linux PATH_MAX; longer text is neither a path nor (not being JSON) inline

# Keys that may hold the entries, in the order they are looked for.
SCHEDULE_KEYS: tuple[str, ...] = (
    "speculative_token_schedule",
    "num_speculative_tokens_per_batch_size",
    "schedule",
)
WRAPPER_KEYS: tuple[str, ...] = ("speculative_config", "specsched")  # objects holding those keys
MAX_WRAPPERS = 4


def schedule_from_obj(obj: Any, max_k: int | None = None) -> Schedule:
    """Accept a bare list, `{"speculative_token_schedule": [...]}`, or a vLLM speculative config
    (`num_speculative_tokens_per_batch_size` / `speculative_token_schedule`, with
    `num_speculative_tokens` used as max_k), possibly under `speculative_config` or `specsched`.
    An explicit `max_k` wins over the config's."""
    for _ in range(MAX_WRAPPERS + 1):  # a loop, not recursion: a self-containing dict ends too
        if isinstance(obj, (list, tuple)):
            return parse_schedule(obj, max_k)
        if not isinstance(obj, dict):
            raise ScheduleError(
                f"schedule: expected a list or an object, got {type(obj).__name__}"
            )
        for key in SCHEDULE_KEYS:
            if key in obj:
                cap = max_k if max_k is not None else obj.get("num_speculative_tokens")
                return parse_schedule(obj[key], cap)
        inner = next((obj[k] for k in WRAPPER_KEYS if isinstance(obj.get(k), dict)), None)
        if inner is None:
            keys = ", ".join(show_text(str(k), 30) if isinstance(k, str) else show_value(k)
                             for k in list(obj)[:10])
            raise ScheduleError(
                f"schedule: no schedule found; expected a list or an object with one of "
                f"{', '.join(SCHEDULE_KEYS)} (got keys: {keys or 'none'})"
            )
        obj = inner
    raise ScheduleError(f"schedule: more than {MAX_WRAPPERS} nested "
                        f"{' / '.join(WRAPPER_KEYS)} objects")


def read_schedule_source(source: str | Path) -> Any:
    """Decode a schedule source into Python data: an inline JSON string (starting with `[` or `{`),
    else a path to a .json / .yaml / .yml file (a regular file of at most MAX_SCHEDULE_BYTES; YAML
    at most MAX_YAML_SCHEDULE_BYTES).
    Decoding is bounded (`specsched.io.data`): depth, integer digits, YAML aliases; YAML scalars
    follow YAML 1.2 core, so `1:30` or `017` is a string (then an error), never a number."""
    text = str(source) if isinstance(source, Path) else source
    if not isinstance(text, str):
        raise ScheduleError(f"schedule: expected a file path or inline JSON, got "
                            f"{type(source).__name__}")
    stripped = text.strip()
    try:
        if stripped.startswith(("[", "{")):
            if len(stripped) > MAX_SCHEDULE_BYTES:
                raise ScheduleError(f"inline schedule: {len(stripped)} characters is over the "
                                    f"{MAX_SCHEDULE_BYTES} limit; put it in a file")
            return parse_json_text(stripped, "inline schedule")
        if len(stripped) > MAX_PATH_CHARS or "\n" in stripped:
            raise ScheduleError(
                f"schedule '{show_text(stripped, 40)}': neither inline JSON (which starts with [ "
                f"or {{) nor a file path"
            )
        raw = read_user_text(stripped, "schedule", MAX_SCHEDULE_BYTES)
        suffix = ".json" if Path(stripped).suffix.lower() == ".json" else ".yaml"
        if suffix == ".yaml" and len(raw) > MAX_YAML_SCHEDULE_BYTES:
            raise ScheduleError(f"{show_text(stripped, 120)}: a YAML schedule may hold at most "
                                f"{MAX_YAML_SCHEDULE_BYTES} bytes ({len(raw)} given); write a "
                                f"table this large as a .json file (up to {MAX_SCHEDULE_BYTES})")
        return parse_data_text(raw, show_text(stripped, 120), suffix)
    except ScheduleError:
        raise
    except UserError as exc:
        raise ScheduleError(str(exc)) from None


def load_schedule(source: str | Path, max_k: int | None = None) -> Schedule:
    """Load and validate a schedule from a file path or an inline JSON string."""
    return schedule_from_obj(read_schedule_source(source), max_k)
