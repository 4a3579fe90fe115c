"""profile.json <-> `Profile`: versioned JSON, validated with one-line errors, written atomically.

Format (schema_version 2; documented with an example in notes/planner.md and examples/profiles/;
version 1 files, which lack the optional per-request acceptance keys, load unchanged):
    {"schema": "specsched.profile", "schema_version": 2,
     "metadata": {"model", "drafter", "dtype", "device", "threads", "source", "created",
                  "library_versions": {name: version}, "notes"},
     "grid": {"batch_sizes": [..], "contexts": [..], "ks": [0, ..]},
     "timings": [{"batch_size", "ctx", "k", "t_step_ms": {"median", "spread", "n"},
                  "t_verify_ms": {..} | null, "t_draft_ms": {..} | null}, ..],
     "acceptance": [{"ctx", "a": [a_1, .., a_K], "n",
                     optional: "num_requests", "spread": [..], "ci_level", "ci_lo": [..],
                     "ci_hi": [..], "requests": [[a_1, .., a_K], ..],
                     "by_output": [{"start", "verifies", "a": [..]}, ..],
                     "persistence": R,
                     "horizons": [{"tokens", "drafted": [[..], ..], "accepted": [[..], ..]}, ..]},
                    ..]}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specsched.errors import UserError
from specsched.io import MiB, atomic_write_json, parse_json_text, read_user_text
from specsched.planner.profile import (
    SCHEMA,
    SCHEMA_VERSION,
    SUPPORTED_SCHEMA_VERSIONS,
    AcceptancePoint,
    HorizonCounts,
    OutputSegment,
    Profile,
    ProfileGrid,
    ProfileMetadata,
    ProfileSource,
    Stat,
    TimingPoint,
)

MAX_PROFILE_BYTES = 64 * MiB  # a profile of a few thousand points is well under 1 MiB


def _stat_obj(s: Stat | None) -> dict[str, Any] | None:
    return None if s is None else {"median": s.median, "spread": s.spread, "n": s.n}


def grid_to_obj(g: ProfileGrid) -> dict[str, Any]:
    return {"batch_sizes": list(g.batch_sizes), "contexts": list(g.contexts), "ks": list(g.ks)}


def metadata_to_obj(m: ProfileMetadata) -> dict[str, Any]:
    return {
        "model": m.model,
        "drafter": m.drafter,
        "dtype": m.dtype,
        "device": m.device,
        "threads": m.threads,
        "source": m.source.value,
        "created": m.created,
        "library_versions": dict(m.library_versions),
        "notes": m.notes,
        "attention_q_tile": m.attention_q_tile,
    }


def timing_to_obj(p: TimingPoint) -> dict[str, Any]:
    return {
        "batch_size": p.batch_size,
        "ctx": p.ctx,
        "k": p.k,
        "t_step_ms": _stat_obj(p.t_step_ms),
        "t_verify_ms": _stat_obj(p.t_verify_ms),
        "t_draft_ms": _stat_obj(p.t_draft_ms),
    }


def acceptance_to_obj(a: AcceptancePoint) -> dict[str, Any]:
    obj: dict[str, Any] = {"ctx": a.ctx, "a": list(a.a), "n": a.n}
    if a.num_requests:
        obj["num_requests"] = a.num_requests
    for key in ("spread", "ci_lo", "ci_hi"):
        values = getattr(a, key)
        if values is not None:
            obj[key] = list(values)
    if a.ci_lo is not None or a.ci_hi is not None:
        obj["ci_level"] = a.ci_level
    if a.requests:
        obj["requests"] = [list(r) for r in a.requests]
    if a.by_output:
        obj["by_output"] = [{"start": g.start, "verifies": g.verifies, "a": list(g.a)}
                            for g in a.by_output]
    if a.persistence is not None:
        obj["persistence"] = a.persistence
    if a.horizons:
        obj["horizons"] = [{"tokens": h.tokens, "drafted": [list(d) for d in h.drafted],
                            "accepted": [list(x) for x in h.accepted]} for h in a.horizons]
    return obj


def profile_to_obj(p: Profile) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "metadata": metadata_to_obj(p.metadata),
        "grid": grid_to_obj(p.grid),
        "timings": [timing_to_obj(t) for t in p.timings],
        "acceptance": [acceptance_to_obj(a) for a in p.acceptance],
    }


# -- decoding -------------------------------------------------------------------------------------
def _get(
    obj: Any, key: str, where: str, kind: type | tuple[type, ...], optional: bool = False
) -> Any:
    if not isinstance(obj, dict):
        raise UserError(f"{where}: expected an object, got {type(obj).__name__}")
    if key not in obj or obj[key] is None:
        if optional:
            return None
        raise UserError(f"{where}.{key}: missing")
    value = obj[key]
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise UserError(f"{where}.{key}: expected a number, got {value!r}")
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise UserError(f"{where}.{key}: expected {names}, got {value!r}")
    return value


def _int_list(obj: Any, key: str, where: str) -> tuple[int, ...]:
    values = _get(obj, key, where, list)
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int):
            raise UserError(f"{where}.{key}[{i}]: expected an integer, got {v!r}")
    return tuple(values)


def stat_from_obj(obj: Any, where: str) -> Stat:
    num = (int, float)
    try:
        return Stat(
            float(_get(obj, "median", where, num)),
            float(_get(obj, "spread", where, num, optional=True) or 0.0),
            int(_get(obj, "n", where, int, optional=True) or 0),
        )
    except UserError as exc:
        msg = str(exc)
        raise UserError(msg if msg.startswith(where) else f"{where}: {msg}") from None


def grid_from_obj(obj: Any, where: str = "grid") -> ProfileGrid:
    try:
        return ProfileGrid(
            _int_list(obj, "batch_sizes", where),
            _int_list(obj, "contexts", where),
            _int_list(obj, "ks", where),
        )
    except UserError as exc:
        msg = str(exc)
        raise UserError(msg if msg.startswith(where) else f"{where}: {msg}") from None


def metadata_from_obj(obj: Any, where: str = "metadata") -> ProfileMetadata:
    if obj is None:
        return ProfileMetadata()
    src = _get(obj, "source", where, str, optional=True) or ProfileSource.MANUAL.value
    try:
        source = ProfileSource(src)
    except ValueError:
        choices = ", ".join(s.value for s in ProfileSource)
        raise UserError(f"{where}.source: {src!r} is not one of {choices}") from None
    versions = _get(obj, "library_versions", where, dict, optional=True) or {}
    threads = _get(obj, "threads", where, int, optional=True)
    q_tile = _get(obj, "attention_q_tile", where, int, optional=True)
    if q_tile is not None and q_tile < 1:
        raise UserError(f"{where}.attention_q_tile: must be >= 1, got {q_tile}")
    return ProfileMetadata(
        model=str(obj.get("model") or "unknown"),
        drafter=str(obj.get("drafter") or "unknown"),
        dtype=str(obj.get("dtype") or "unknown"),
        device=str(obj.get("device") or "unknown"),
        threads=threads,
        source=source,
        created=str(obj.get("created") or ""),
        library_versions={str(k): str(v) for k, v in versions.items()},
        notes=str(obj.get("notes") or ""),
        attention_q_tile=q_tile,
    )


def timing_from_obj(obj: Any, where: str) -> TimingPoint:
    b = _get(obj, "batch_size", where, int)
    c = _get(obj, "ctx", where, int)
    k = _get(obj, "k", where, int)
    opt = {}
    for key in ("t_verify_ms", "t_draft_ms"):
        raw = _get(obj, key, where, dict, optional=True)
        opt[key] = None if raw is None else stat_from_obj(raw, f"{where}.{key}")
    step = stat_from_obj(_get(obj, "t_step_ms", where, dict), f"{where}.t_step_ms")
    return TimingPoint(b, c, k, step, opt["t_verify_ms"], opt["t_draft_ms"])


def segment_from_obj(obj: Any, where: str) -> OutputSegment:
    from specsched.planner.acceptance import check_acceptance

    return OutputSegment(_get(obj, "start", where, int), _get(obj, "verifies", where, int),
                         check_acceptance(_get(obj, "a", where, list), f"{where}.a"))


def _count_rows(obj: Any, where: str) -> tuple[tuple[int, ...], ...]:
    if not isinstance(obj, list) or not all(isinstance(r, list) for r in obj):
        raise UserError(f"{where}: expected a list of lists of counts")
    for i, row in enumerate(obj):
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in row):
            raise UserError(f"{where}[{i}]: counts must be integers, got {row}")
    return tuple(tuple(r) for r in obj)


def horizon_from_obj(obj: Any, where: str) -> HorizonCounts:
    return HorizonCounts(_get(obj, "tokens", where, int),
                         _count_rows(_get(obj, "drafted", where, list), f"{where}.drafted"),
                         _count_rows(_get(obj, "accepted", where, list), f"{where}.accepted"))


def acceptance_from_obj(obj: Any, where: str) -> AcceptancePoint:
    from specsched.planner.acceptance import check_acceptance

    ctx = _get(obj, "ctx", where, int)
    a = check_acceptance(_get(obj, "a", where, list), f"{where}.a")
    n = _get(obj, "n", where, int, optional=True) or 0
    opt: dict[str, tuple[float, ...] | None] = {}
    for key in ("spread", "ci_lo", "ci_hi"):
        raw = _get(obj, key, where, list, optional=True)
        opt[key] = None if raw is None else check_acceptance(raw, f"{where}.{key}")
    raw_requests = _get(obj, "requests", where, list, optional=True) or []
    requests = tuple(check_acceptance(r, f"{where}.requests[{i}]")
                     for i, r in enumerate(raw_requests))
    num_requests = _get(obj, "num_requests", where, int, optional=True) or len(requests)
    level = _get(obj, "ci_level", where, (int, float), optional=True)
    raw_segments = _get(obj, "by_output", where, list, optional=True) or []
    segments = tuple(segment_from_obj(g, f"{where}.by_output[{i}]")
                     for i, g in enumerate(raw_segments))
    persistence = _get(obj, "persistence", where, (int, float), optional=True)
    raw_horizons = _get(obj, "horizons", where, list, optional=True) or []
    horizons = tuple(horizon_from_obj(h, f"{where}.horizons[{i}]")
                     for i, h in enumerate(raw_horizons))
    try:
        return AcceptancePoint(ctx, a, n, num_requests, opt["spread"], opt["ci_lo"],
                               opt["ci_hi"], 0.95 if level is None else float(level), requests,
                               segments, None if persistence is None else float(persistence),
                               horizons)
    except UserError as exc:
        raise UserError(f"{where}: {exc}") from None


def profile_from_obj(obj: Any, where: str = "profile") -> Profile:
    """Validate decoded JSON into a Profile; every error is one line naming the JSON path."""
    if not isinstance(obj, dict):
        raise UserError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    schema = obj.get("schema")
    if schema != SCHEMA:
        raise UserError(f"{where}: not a specsched profile (schema is {schema!r}, need {SCHEMA!r})")
    version = obj.get("schema_version")
    if isinstance(version, bool) or version not in SUPPORTED_SCHEMA_VERSIONS:
        readable = ", ".join(str(v) for v in SUPPORTED_SCHEMA_VERSIONS)
        raise UserError(
            f"{where}: schema_version {version!r} is not supported (this specsched reads "
            f"{readable}); re-create the profile or upgrade specsched"
        )
    grid = grid_from_obj(obj.get("grid"), f"{where}: grid")
    timings_raw = _get(obj, "timings", where, list, optional=True) or []
    acc_raw = _get(obj, "acceptance", where, list, optional=True) or []
    timings = tuple(timing_from_obj(t, f"{where}: timings[{i}]") for i, t in enumerate(timings_raw))
    acceptance = tuple(
        acceptance_from_obj(a, f"{where}: acceptance[{i}]") for i, a in enumerate(acc_raw)
    )
    try:
        return Profile(
            metadata_from_obj(obj.get("metadata"), f"{where}: metadata"),
            grid,
            timings,
            tuple(sorted(acceptance, key=lambda a: a.ctx)),
        )
    except UserError as exc:
        raise UserError(f"{where}: {exc}") from None


def load_profile(path: str | Path) -> Profile:
    p = Path(path)
    if not p.exists():
        raise UserError(f"{p}: no such profile file (create one with `specsched profile`)")
    obj = parse_json_text(read_user_text(p, "profile", MAX_PROFILE_BYTES), str(p))
    return profile_from_obj(obj, str(p))


def save_profile(profile: Profile, path: str | Path) -> None:
    atomic_write_json(path, profile_to_obj(profile))
