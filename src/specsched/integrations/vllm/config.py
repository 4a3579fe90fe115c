"""The integration's settings, read from vLLM's `--additional-config` at engine start.

Accepted shapes of `additional_config["specsched"]` (JSON through `--additional-config`):
- an object: `{"schedule": [[bs_lo, bs_hi, ctx_lo, ctx_hi, K], ...] | "path.json|yaml",
  "ctx_agg": "mean"|"median"|"max", "log_every": N, "trace": "steps.jsonl"}`;
- a string: a path to a JSON/YAML file holding that object (or a bare list of entries).
Validation raises specsched's one-line `UserError`/`ScheduleError`. File reading lives in the
`load_*` functions; the dataclass validates without I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specsched.errors import ScheduleError, UserError
from specsched.policy.route import CtxAgg
from specsched.schedule import Schedule, read_schedule_source, schedule_from_obj

ADDITIONAL_CONFIG_KEY = "specsched"
ALLOWED_KEYS = ("schedule", "ctx_agg", "log_every", "trace")


@dataclass(frozen=True, slots=True)
class VllmIntegrationConfig:
    """What the scheduler class needs: the 2-D schedule and how to summarize contexts."""

    schedule: Schedule
    ctx_agg: CtxAgg = CtxAgg.MEAN
    log_every: int = 0  # steps between info-level K-usage summaries; 0: only at shutdown
    trace: str | None = None  # JSON-lines file: one record per step with a K decision

    def __post_init__(self) -> None:
        if not isinstance(self.schedule, Schedule):
            raise UserError("specsched: schedule must be a parsed Schedule")
        if not isinstance(self.ctx_agg, CtxAgg):
            raise UserError("specsched: ctx_agg must be a CtxAgg")
        if isinstance(self.log_every, bool) or not isinstance(self.log_every, int):
            raise UserError(f"specsched: log_every must be an integer, got {self.log_every!r}")
        if self.log_every < 0:
            raise UserError(f"specsched: log_every must be >= 0, got {self.log_every}")
        if self.trace is not None and (not isinstance(self.trace, str) or not self.trace):
            raise UserError(f"specsched: trace must be a file path, got {self.trace!r}")

    def to_additional_config(self) -> dict[str, Any]:
        """The `--additional-config` object that reproduces this config (schedule inline)."""
        body: dict[str, Any] = {
            "schedule": self.schedule.entries(self.schedule.arity),
            "ctx_agg": self.ctx_agg.value,
        }
        if self.log_every:
            body["log_every"] = self.log_every
        if self.trace is not None:
            body["trace"] = self.trace
        return {ADDITIONAL_CONFIG_KEY: body}


def parse_ctx_agg(value: Any) -> CtxAgg:
    """`CtxAgg` from its name, with a one-line error listing the choices."""
    try:
        return CtxAgg(value)
    except ValueError:
        choices = ", ".join(a.value for a in CtxAgg)
        raise UserError(f"specsched: ctx_agg must be one of {choices}, got {value!r}") from None


def config_from_obj(obj: Any) -> VllmIntegrationConfig:
    """Build the config from the decoded `additional_config["specsched"]` value.

    A string value or a string `schedule` is a file path (or inline JSON) and is read here."""
    if isinstance(obj, str):
        obj = read_schedule_source(obj)
        if isinstance(obj, list):
            obj = {"schedule": obj}
    if not isinstance(obj, Mapping):
        raise UserError(
            f"specsched: additional_config[{ADDITIONAL_CONFIG_KEY!r}] must be an object "
            f"or a file path, got {type(obj).__name__}"
        )
    unknown = sorted(set(obj) - set(ALLOWED_KEYS))
    if unknown:
        raise UserError(
            f"specsched: unknown key(s) {', '.join(map(repr, unknown))} in additional_config"
            f"[{ADDITIONAL_CONFIG_KEY!r}]; allowed: {', '.join(ALLOWED_KEYS)}"
        )
    if "schedule" not in obj:
        raise ScheduleError(
            f"specsched: additional_config[{ADDITIONAL_CONFIG_KEY!r}] has no 'schedule'; give "
            "the 5-item entries or a file path (see `specsched export --to vllm`)"
        )
    raw = obj["schedule"]
    if isinstance(raw, str):
        raw = read_schedule_source(raw)
    try:
        schedule = schedule_from_obj(raw)
    except ScheduleError as exc:
        raise ScheduleError(f"specsched schedule: {exc}") from None
    return VllmIntegrationConfig(
        schedule=schedule,
        ctx_agg=parse_ctx_agg(obj.get("ctx_agg", CtxAgg.MEAN.value)),
        log_every=obj.get("log_every", 0),
        trace=obj.get("trace"),
    )


def config_from_additional(additional_config: Any) -> VllmIntegrationConfig | None:
    """The config under `additional_config["specsched"]`, or None when the key is absent."""
    if not isinstance(additional_config, Mapping):
        return None
    if ADDITIONAL_CONFIG_KEY not in additional_config:
        return None
    return config_from_obj(additional_config[ADDITIONAL_CONFIG_KEY])
