"""The integration's settings, read from vLLM's `--additional-config` at engine start.

Accepted shapes of `additional_config["specsched"]` (JSON through `--additional-config`):
- an object: `{"schedule": [[bs_lo, bs_hi, ctx_lo, ctx_hi, K], ...] | "path.json|yaml",
  "ctx_agg": "mean"|"median"|"max", "log_every": N, "trace": "steps.jsonl",
  "hysteresis": {"persist_steps": N, "margin": 0.1}, "policy": "static"|"adaptive",
  "adaptive": {"profile": "profile.json", "max_k": 4, ...}}` (`adaptive_settings.py`: the
  closed-loop policy with the schedule as its prior; `per_request_k` may only be false); the
  upstream proposal's key names
  (`speculative_token_schedule`, or `num_speculative_tokens_per_batch_size` with 5-item entries)
  are accepted for `schedule`, so its two keys move here verbatim (vLLM <= 0.33 rejects them in
  `--speculative-config` before any scheduler class loads: extra="forbid", 3-item tuples);
- a string: a path to a JSON/YAML file holding that object (or a bare list of entries).
Validation raises specsched's one-line `UserError`/`ScheduleError`. File reading lives in the
`load_*` functions; the dataclass validates without I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specsched.errors import ScheduleError, UserError
from specsched.integrations.vllm.adaptive_settings import (
    TUNABLE,
    parse_adaptive,
    refuse_per_request,
)
from specsched.io import check_keys, show_value
from specsched.policy import AdaptiveConfig, PolicyKind
from specsched.policy.hysteresis import HysteresisConfig
from specsched.policy.route import CtxAgg
from specsched.schedule import Schedule, read_schedule_source, schedule_from_obj

ADDITIONAL_CONFIG_KEY = "specsched"
# The schedule's key: specsched's own name, then the proposal's (vLLM RFC #48627 / PR #48944).
SCHEDULE_KEYS = ("schedule", "speculative_token_schedule", "num_speculative_tokens_per_batch_size")
ALLOWED_KEYS = (*SCHEDULE_KEYS, "ctx_agg", "log_every", "trace", "hysteresis", "policy",
                "adaptive", "per_request_k")
HYSTERESIS_KEYS = frozenset({"persist_steps", "margin"})


@dataclass(frozen=True, slots=True)
class VllmIntegrationConfig:
    """What the scheduler class needs: the 2-D schedule and how to summarize contexts."""

    schedule: Schedule
    ctx_agg: CtxAgg = CtxAgg.MEAN
    log_every: int = 0  # steps between info-level K-usage summaries; 0: only at shutdown
    trace: str | None = None  # JSON-lines file: one record per step with a K decision
    hysteresis: HysteresisConfig | None = None  # None: off (the proposal's behaviour exactly)
    policy: PolicyKind = PolicyKind.STATIC  # ADAPTIVE: learns online, `schedule` is its prior
    adaptive: AdaptiveConfig | None = None  # ADAPTIVE only (None: AdaptiveConfig() defaults)
    # The `adaptive` block as written (profile path, settings): what `--additional-config`
    # carries back; None: every scalar setting of `adaptive` (priors are not re-emitted).
    adaptive_settings: dict[str, Any] | None = None

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
        if self.hysteresis is not None and not isinstance(self.hysteresis, HysteresisConfig):
            raise UserError("specsched: hysteresis must be a HysteresisConfig")
        if not isinstance(self.policy, PolicyKind):
            raise UserError("specsched: policy must be a PolicyKind")
        if self.policy is PolicyKind.STATIC and (self.adaptive or self.adaptive_settings):
            raise UserError('specsched: adaptive settings need "policy": "adaptive"')

    @property
    def is_adaptive(self) -> bool:
        return self.policy is PolicyKind.ADAPTIVE

    @property
    def adaptive_config(self) -> AdaptiveConfig:
        return self.adaptive or AdaptiveConfig()

    @property
    def adaptive_max_k_given(self) -> bool:
        """False when `max_k` is left to the engine (`num_speculative_tokens`)."""
        return self.adaptive_settings is None or "max_k" in self.adaptive_settings

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
        if self.hysteresis is not None:
            body["hysteresis"] = {"persist_steps": self.hysteresis.persist_steps,
                                  "margin": self.hysteresis.margin}
        if self.is_adaptive:
            body["policy"] = self.policy.value
            cfg = self.adaptive_config
            body["adaptive"] = dict(self.adaptive_settings) if self.adaptive_settings is not None \
                else {name: getattr(cfg, name) for name in sorted(TUNABLE)}
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
    obj = check_keys(obj, set(ALLOWED_KEYS),
                     f"specsched: additional_config[{ADDITIONAL_CONFIG_KEY!r}]")
    given = [k for k in SCHEDULE_KEYS if k in obj]
    if len(given) != 1:
        what = "has no 'schedule'" if not given else f"has {' and '.join(given)}; give one"
        raise ScheduleError(
            f"specsched: additional_config[{ADDITIONAL_CONFIG_KEY!r}] {what}; give "
            "the 5-item entries or a file path (see `specsched export --to vllm`)"
        )
    raw = obj[given[0]]
    if isinstance(raw, str):
        raw = read_schedule_source(raw)
    try:
        schedule = schedule_from_obj(raw)
    except ScheduleError as exc:
        raise ScheduleError(f"specsched schedule: {exc}") from None
    refuse_per_request(obj.get("per_request_k"), "")
    policy = parse_policy(obj.get("policy", PolicyKind.STATIC.value))
    adaptive, settings = None, None
    if policy is PolicyKind.ADAPTIVE:
        adaptive, settings = parse_adaptive(obj.get("adaptive"))
    elif obj.get("adaptive") is not None:
        raise UserError('specsched: adaptive settings need "policy": "adaptive"')
    return VllmIntegrationConfig(
        schedule=schedule,
        ctx_agg=parse_ctx_agg(obj.get("ctx_agg", CtxAgg.MEAN.value)),
        log_every=obj.get("log_every", 0),
        trace=obj.get("trace"),
        hysteresis=parse_hysteresis(obj.get("hysteresis")),
        policy=policy,
        adaptive=adaptive,
        adaptive_settings=settings,
    )


def parse_policy(value: Any) -> PolicyKind:
    try:
        return PolicyKind(value)
    except ValueError:
        choices = ", ".join(k.value for k in PolicyKind)
        raise UserError(f"specsched: policy must be one of {choices}, got {show_value(value)}"
                        ) from None


def parse_hysteresis(value: Any) -> HysteresisConfig | None:
    """`{"persist_steps": N, "margin": m}` -> config; None/absent: off. A margin alone is a dead
    band (persist_steps 0: only a crossing beyond the margin switches)."""
    if value is None:
        return None
    value = check_keys(value, HYSTERESIS_KEYS, "specsched: hysteresis")
    try:
        persist = value.get("persist_steps", 0 if "margin" in value else 1)
        return HysteresisConfig(persist, value.get("margin"))
    except UserError as exc:
        raise UserError(f"specsched: {exc}") from None


def config_from_additional(additional_config: Any) -> VllmIntegrationConfig | None:
    """The config under `additional_config["specsched"]`, or None when the key is absent."""
    if not isinstance(additional_config, Mapping):
        return None
    if ADDITIONAL_CONFIG_KEY not in additional_config:
        return None
    return config_from_obj(additional_config[ADDITIONAL_CONFIG_KEY])
