"""The serving settings written around a schedule: every other field of a speculative config.

A schedule often arrives inside a vLLM `--speculative-config` object: stock fields (`method`,
`model`, `num_speculative_tokens`, drafter parameters such as `draft_tensor_parallel_size` or
`prompt_lookup_min` / `prompt_lookup_max`) around `num_speculative_tokens_per_batch_size`, or the
upstream proposal's keys (vLLM RFC #48627 / PR #48944: `speculative_token_schedule`, `ctx_agg`).
An export must keep every one of them, or it prints a different server. `ServingSpec` holds them
beside the parsed schedule; `num_speculative_tokens` becomes the schedule's `max_k` (as in
`schedule_from_obj`) and `ctx_agg` is kept apart, as written (the policy room validates it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specsched.errors import ScheduleError
from specsched.schedule.load import SCHEDULE_KEYS, read_schedule_source, schedule_from_obj
from specsched.schedule.model import Schedule

CTX_AGG_KEY = "ctx_agg"
MAX_K_KEY = "num_speculative_tokens"
# Keys the speculative config's own fields never include: the entries, the clamp, the aggregator.
NOT_FIELDS = frozenset({*SCHEDULE_KEYS, CTX_AGG_KEY, MAX_K_KEY})


@dataclass(frozen=True, slots=True)
class ServingSpec:
    """A schedule and the speculative-config fields written around it.

    fields: every other key of the input speculative config, in input order (method, model,
        drafter parameters...); empty for a bare list or a wrapper dict.
    ctx_agg: the input's `ctx_agg` as written, or None when it has none.
    """

    schedule: Schedule
    fields: tuple[tuple[str, Any], ...] = ()
    ctx_agg: str | None = None

    @property
    def field_dict(self) -> dict[str, Any]:
        return dict(self.fields)

    @property
    def method(self) -> str | None:
        value = self.field_dict.get("method")
        return None if value is None else str(value)

    @property
    def model(self) -> str | None:
        value = self.field_dict.get("model")
        return None if value is None else str(value)


def _has_schedule_key(obj: dict[str, Any]) -> bool:
    return any(k in obj for k in SCHEDULE_KEYS)


def _speculative_dict(obj: Any) -> tuple[dict[str, Any] | None, Any]:
    """(the speculative config whose fields to keep, the ctx_agg value) of a decoded source.

    A vLLM speculative config is an object holding `speculative_token_schedule` or
    `num_speculative_tokens_per_batch_size` (or one under a `speculative_config` key). specsched's
    own integration form (`{"schedule": ..., "ctx_agg": ...}`, also under `specsched`) carries no
    speculative-config fields, only its aggregator."""
    if not isinstance(obj, dict):
        return None, None
    if not _has_schedule_key(obj):
        if isinstance(obj.get("speculative_config"), dict):
            return _speculative_dict(obj["speculative_config"])
        if isinstance(obj.get("specsched"), dict):
            return None, obj["specsched"].get(CTX_AGG_KEY)
        return None, None
    if "schedule" in obj:
        return None, obj.get(CTX_AGG_KEY)
    return obj, obj.get(CTX_AGG_KEY)


def serving_spec_from_obj(obj: Any, max_k: int | None = None) -> ServingSpec:
    """The schedule (`schedule_from_obj`) plus the fields and `ctx_agg` of a decoded source."""
    schedule = schedule_from_obj(obj, max_k)
    spec, ctx_agg = _speculative_dict(obj)
    if ctx_agg is not None and not isinstance(ctx_agg, str):
        raise ScheduleError(f"ctx_agg must be a string (mean, median, max), got {ctx_agg!r}")
    fields: list[tuple[str, Any]] = []
    for key, value in (spec or {}).items():
        if not isinstance(key, str):
            raise ScheduleError(f"speculative config: keys must be strings, got {key!r}")
        if key not in NOT_FIELDS:
            fields.append((key, value))
    return ServingSpec(schedule, tuple(fields), ctx_agg)


def load_serving_spec(source: str | Path, max_k: int | None = None) -> ServingSpec:
    """`serving_spec_from_obj` of a file path or an inline JSON string."""
    return serving_spec_from_obj(read_schedule_source(source), max_k)
