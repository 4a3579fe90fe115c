"""Read an experiment file (YAML or JSON) into an `Experiment`, with one-line errors that name
the field (its canonical form and hash: `canonical.py`)."""

from __future__ import annotations

import json
import re
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar

from specsched.bench.arm_policy import parse_policy
from specsched.bench.experiment import (
    Arm,
    BackendKind,
    DrafterChoice,
    Experiment,
    Sampling,
    Scenario,
    ScenarioKind,
    ServerSpec,
    drafter_choice,
)
from specsched.errors import UserError
from specsched.io import (
    MiB,
    check_keys,
    parse_data_text,
    read_user_text,
    show_text,
    show_value,
)
from specsched.policy import CtxAgg
from specsched.schedule import Schedule, load_schedule, schedule_from_obj

ARM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")  # names files: no paths, no spaces

E = TypeVar("E", bound=Enum)
MAX_EXPERIMENT_BYTES = 4 * MiB
TOP_KEYS = {"name", "arms", "scenarios", "baseline", "replicates", "warmup", "seed", "backend",
            "backend_options", "drafter"}
ARM_KEYS = {"name", "schedule", "k", "ctx_agg", "drafter", "per_request_k", "max_k", "server",
            "options", "policy", "adaptive", "warm"}
SERVER_KEYS = {"base_url", "command", "model", "ready_timeout_s", "env"}
SCENARIO_KEYS = {"name", "kind", "output_len", "num_requests", "concurrency", "prompt_lens",
                 "prefix_len", "suffix_len", "num_prefixes", "input_len", "range_ratio", "sampling",
                 "phase_len", "repeat_unit", "document_unit", "document_shuffle", "replicates"}
SAMPLING_KEYS = {"temperature", "top_p", "top_k"}


def _int(obj: dict[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = obj.get(key, default)
    if value is None:
        raise UserError(f"{where}: `{key}` is required (an integer)")
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"{where}: `{key}` must be an integer, got {show_value(value)}")
    return value


def _num(obj: dict[str, Any], key: str, where: str, default: float) -> float:
    value = obj.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UserError(f"{where}: `{key}` must be a number, got {show_value(value)}")
    return float(value)


def _flag(obj: dict[str, Any], key: str, where: str) -> bool:
    value = obj.get(key, False)
    if not isinstance(value, bool):
        raise UserError(f"{where}: `{key}` must be true or false, got {show_value(value)}")
    return value


def _str(obj: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
    value = obj.get(key, default)
    if not isinstance(value, str) or not value:
        raise UserError(f"{where}: `{key}` must be a non-empty string, got {show_value(value)}")
    return value


def _enum(cls: type[E], value: Any, where: str) -> E:
    try:
        return cls(value)
    except ValueError:
        choices = ", ".join(m.value for m in cls)
        raise UserError(f"{where}: {show_value(value)} is not one of {choices}") from None


def _options(value: Any, where: str) -> tuple[tuple[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise UserError(f"{where}: expected a mapping, got {type(value).__name__}")
    try:
        json.dumps(value)
    except TypeError as exc:
        raise UserError(f"{where}: values must be plain JSON data ({exc})") from None
    return tuple(sorted((str(k), v) for k, v in value.items()))


def _server(obj: Any, where: str) -> ServerSpec:
    obj = check_keys(obj, SERVER_KEYS, where)
    command = obj.get("command", ())
    if isinstance(command, str):
        command = command.split()
    if not isinstance(command, (list, tuple)) or not all(isinstance(c, str) for c in command):
        raise UserError(f"{where}: `command` must be a string or a list of strings")
    env = obj.get("env") or {}
    if not isinstance(env, dict):
        raise UserError(f"{where}: `env` must be a mapping of strings")
    model = obj.get("model")
    if model is not None and not isinstance(model, str):
        raise UserError(f"{where}: `model` must be a string")
    return ServerSpec(
        base_url=_str(obj, "base_url", where, "http://127.0.0.1:8000").rstrip("/"),
        command=tuple(command),
        model=model,
        ready_timeout_s=_num(obj, "ready_timeout_s", where, 600.0),
        env=tuple(sorted((str(k), str(v)) for k, v in env.items())),
    )


def parse_arm(obj: Any, index: int, base_dir: Path,
              default_drafter: DrafterChoice | str) -> Arm:
    where = f"arms[{index}]"
    obj = check_keys(obj, ARM_KEYS, where)
    name = _str(obj, "name", where)
    if not ARM_NAME.fullmatch(name):
        raise UserError(f"{where}: arm name {show_value(name)} must be 1-64 characters of letters, "
                        "digits, '.', '_', '+', '-', starting with a letter or digit (it names "
                        "files: server logs, charts)")
    where = f"arm {show_value(name)}"
    has_schedule, has_k = "schedule" in obj, "k" in obj
    if has_schedule == has_k:
        raise UserError(f"{where}: give exactly one of `schedule` (file or inline) or `k`")
    max_k = obj.get("max_k")
    if max_k is not None:
        max_k = _int(obj, "max_k", where)
    if has_k:
        k = _int(obj, "k", where)
        if k < 0:
            raise UserError(f"{where}: `k` must be >= 0, got {k}")
        schedule = Schedule.constant(k).clamped(max_k)
    else:
        source = obj["schedule"]
        try:
            if isinstance(source, str) and not source.strip().startswith(("[", "{")):
                path = Path(source)
                schedule = load_schedule(path if path.is_absolute() else base_dir / path, max_k)
            elif isinstance(source, str):
                schedule = load_schedule(source, max_k)
            else:
                schedule = schedule_from_obj(source, max_k)
        except UserError as exc:
            raise UserError(f"{where}: schedule: {exc}") from None
    per_request = _flag(obj, "per_request_k", where)
    ctx_agg = _enum(CtxAgg, obj.get("ctx_agg", "mean"), f"{where}: ctx_agg")
    warm = _flag(obj, "warm", where)
    policy = parse_policy(obj, schedule, ctx_agg, per_request, base_dir, where)
    zero = policy.max_k == 0  # never drafts: no drafter unless one is named
    drafter = obj.get("drafter", DrafterChoice.NONE if zero else default_drafter)
    if not isinstance(drafter, str) or not drafter:
        raise UserError(f"{where}: `drafter` must be a non-empty string")
    return Arm(
        name=name,
        policy=policy,
        drafter=drafter_choice(drafter),
        server=None if obj.get("server") is None else _server(obj["server"], f"{where}: server"),
        options=_options(obj.get("options"), f"{where}: options"),
        warm=warm,
    )


def parse_scenario(obj: Any, index: int) -> Scenario:
    where = f"scenarios[{index}]"
    obj = check_keys(obj, SCENARIO_KEYS, where)
    name = _str(obj, "name", where)
    where = f"scenario {show_value(name)}"
    kind = _enum(ScenarioKind, obj.get("kind"), f"{where}: kind")
    prompt_lens: tuple[int, ...] = ()
    if kind is ScenarioKind.BATCH:
        raw = obj.get("prompt_lens")
        if not isinstance(raw, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in raw
        ):
            raise UserError(f"{where}: batch needs `prompt_lens`, a list of integers")
        prompt_lens = tuple(raw)
    default_n = len(prompt_lens) if prompt_lens else None
    num_requests = _int(obj, "num_requests", where, default_n)
    sampling_obj = check_keys(obj.get("sampling") or {}, SAMPLING_KEYS, f"{where}: sampling")
    return Scenario(
        name=name,
        kind=kind,
        output_len=_int(obj, "output_len", where),
        num_requests=num_requests,
        concurrency=_int(obj, "concurrency", where, num_requests),
        prompt_lens=prompt_lens,
        prefix_len=_int(obj, "prefix_len", where, 0),
        suffix_len=_int(obj, "suffix_len", where, 0),
        num_prefixes=_int(obj, "num_prefixes", where, 1),
        input_len=_int(obj, "input_len", where, 0),
        range_ratio=_num(obj, "range_ratio", where, 0.0),
        phase_len=_int(obj, "phase_len", where, 0),
        repeat_unit=_int(obj, "repeat_unit", where, 24),
        document_unit=_int(obj, "document_unit", where, 0),
        document_shuffle=_flag(obj, "document_shuffle", where),
        sampling=Sampling(
            temperature=_num(sampling_obj, "temperature", f"{where}: sampling", 0.0),
            top_p=_num(sampling_obj, "top_p", f"{where}: sampling", 1.0),
            top_k=_int(sampling_obj, "top_k", f"{where}: sampling", 0),
        ),
        replicates=None if obj.get("replicates") is None else _int(obj, "replicates", where),
    )


def experiment_from_obj(obj: Any, base_dir: Path = Path(".")) -> Experiment:
    """Validate decoded experiment data. Relative schedule paths resolve against `base_dir`."""
    obj = check_keys(obj, TOP_KEYS, "experiment")
    for key in ("arms", "scenarios"):
        if not isinstance(obj.get(key), list):
            raise UserError(f"experiment: `{key}` is required, a list")
    default_drafter = drafter_choice(
        _str(obj, "drafter", "experiment", DrafterChoice.BACKEND_DEFAULT.value))
    arms = tuple(parse_arm(a, i, base_dir, default_drafter) for i, a in enumerate(obj["arms"]))
    scenarios = tuple(parse_scenario(s, i) for i, s in enumerate(obj["scenarios"]))
    baseline = obj.get("baseline", arms[0].name if arms else "")
    return Experiment(
        name=_str(obj, "name", "experiment", "experiment"),
        arms=arms,
        scenarios=scenarios,
        baseline=baseline if isinstance(baseline, str) else str(baseline),
        replicates=_int(obj, "replicates", "experiment", 5),
        warmup=_int(obj, "warmup", "experiment", 1),
        seed=_int(obj, "seed", "experiment", 0),
        backend=_enum(BackendKind, obj.get("backend", "engine"), "experiment: backend"),
        backend_options=_options(obj.get("backend_options"), "experiment: backend_options"),
    )


def load_experiment(path: str | Path) -> Experiment:
    """Read a .yaml/.yml/.json experiment file (a regular file of at most MAX_EXPERIMENT_BYTES,
    decoded with `specsched.io`'s bounds: depth, integer digits, YAML aliases, YAML 1.2 core
    scalars)."""
    path = Path(path)
    raw = read_user_text(path, "experiment", MAX_EXPERIMENT_BYTES)
    where = show_text(str(path), 120)
    obj = parse_data_text(raw, where, path.suffix)
    try:
        return experiment_from_obj(obj, path.parent)
    except UserError as exc:
        raise UserError(f"{where}: {exc}") from None
