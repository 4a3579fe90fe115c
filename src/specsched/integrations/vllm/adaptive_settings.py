"""The settings of the adaptive policy inside vLLM's scheduler class (no vLLM import).

`"adaptive": {"profile": "profile.json", "max_k": 4, <any other AdaptiveConfig field>}` in
`additional_config["specsched"]`:
- `parse_adaptive`: the block -> `AdaptiveConfig` (profile priors through
  `planner.adaptive_prior`; a profile without timing points gives the acceptance prior only;
  explicit `cost_prior` / `acceptance_prior` objects win over the profile's); one-line errors for
  unknown keys, bad values, a profile that cannot be read;
- `engine_adaptive`: at engine start, `max_k` (default: `num_speculative_tokens`) against the
  speculative config: not above `num_speculative_tokens`, and every K in 0..max_k in vLLM's
  dense K table (any of them may be chosen at any batch size);
- `refuse_per_request`: vLLM's model runner drafts one K per step for every request.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from specsched.errors import UserError
from specsched.io import check_keys, show_value
from specsched.policy import AdaptiveConfig
from specsched.policy.cost import NUM_FEATURES, StepCostModel
from specsched.policy.cost_shape import CostShape

PRIOR_KEYS = ("cost_prior", "acceptance_prior")
# Scalar settings (name -> "int" | "float"), read from the dataclass.
TUNABLE = {f.name: str(f.type) for f in dataclasses.fields(AdaptiveConfig)
           if f.name not in PRIOR_KEYS}
ADAPTIVE_KEYS = ("profile", *sorted(TUNABLE), *PRIOR_KEYS, "per_request_k")


def refuse_per_request(value: Any, where: str) -> None:
    """`per_request_k` may only be false here: vLLM drafts one K per step for every request."""
    if value is None or value is False:
        return
    raise UserError(
        f"specsched: {where}per_request_k={show_value(value)} is not available in vLLM (its model "
        "runner drafts one K per step for every request); remove it"
    )


def _number(name: str, value: Any, kind: str) -> int | float:
    ok = not isinstance(value, bool) and (
        isinstance(value, int) if kind == "int"
        else isinstance(value, (int, float)) and math.isfinite(value))
    if not ok:
        what = "an integer" if kind == "int" else "a finite number"
        raise UserError(f"specsched: adaptive {name} must be {what}, got {show_value(value)}")
    return value


def _acceptance_prior(value: Any) -> tuple[tuple[int, tuple[float, ...]], ...]:
    """`[[ctx, [a_1, ..., a_K]], ...]` (a profile's acceptance per position at a context)."""
    try:
        return tuple((int(_number("acceptance_prior context", c, "int")),
                      tuple(float(_number("acceptance_prior rate", x, "float")) for x in a))
                     for c, a in value)
    except (TypeError, ValueError):
        raise UserError("specsched: adaptive acceptance_prior must be [[ctx, [a_1, ...]], ...], "
                        f"got {show_value(value)}") from None


def _cost_prior(value: Any) -> StepCostModel:
    """`{"coef": [...], "rel_rmse": r, "num_samples": n, "typical_seconds": t,
    "batch_range": [lo, hi], "ctx_range": [lo, hi], "verified_depths": [[B, ctx, depth], ...],
    "q_tile": q, "shape": {...}}` (`StepCostModel.to_json`; all but coef optional) or the
    coefficient list alone."""
    body = value if isinstance(value, Mapping) else {"coef": value}
    coef = body.get("coef")
    if not isinstance(coef, (list, tuple)) or len(coef) not in (NUM_FEATURES - 1, NUM_FEATURES):
        raise UserError(f"specsched: adaptive cost_prior needs {NUM_FEATURES} coefficients "
                        f"({NUM_FEATURES - 1} from before the tile term; StepCostModel.to_json), "
                        f"got {show_value(value)}")
    q_tile = body.get("q_tile")
    return StepCostModel(tuple(float(_number("cost_prior coef", c, "float")) for c in coef),
                         float(_number("cost_prior rel_rmse", body.get("rel_rmse", 0.0), "float")),
                         int(_number("cost_prior num_samples", body.get("num_samples", 0), "int")),
                         _typical(body.get("typical_seconds", 0.05)),
                         batch_range=_box("batch_range", body.get("batch_range")),
                         ctx_range=_box("ctx_range", body.get("ctx_range")),
                         verified_depths=_depths(body.get("verified_depths", ())),
                         q_tile=None if q_tile is None else _q_tile(q_tile),
                         shape=_cost_shape(body.get("shape")))


def _cost_shape(value: Any) -> CostShape | None:
    """A cost prior's `{"batch_sizes", "contexts", "ks", "log_ratio"}` (`CostShape.to_json`;
    absent: the plane alone)."""
    if value is None:
        return None
    try:
        return CostShape(tuple(int(_number("cost_prior shape axis", v, "int"))
                               for v in value["batch_sizes"]),
                         tuple(int(_number("cost_prior shape axis", v, "int"))
                               for v in value["contexts"]),
                         tuple(int(_number("cost_prior shape axis", v, "int"))
                               for v in value["ks"]),
                         tuple(tuple(tuple(float(_number("cost_prior shape log_ratio", x,
                                                         "float")) for x in row)
                                     for row in plane) for plane in value["log_ratio"]))
    except (TypeError, KeyError, ValueError) as exc:
        raise UserError(f"specsched: adaptive cost_prior shape must be {{batch_sizes, contexts, "
                        f"ks, log_ratio}} (CostShape.to_json): {exc}") from None


def _q_tile(value: Any) -> int:
    q = int(_number("cost_prior q_tile", value, "int"))
    if q < 1:
        raise UserError(f"specsched: adaptive cost_prior q_tile must be >= 1, got {q}")
    return q


def _depths(value: Any) -> tuple[tuple[int, int, int], ...]:
    """A cost prior's `[[B, ctx, depth], ...]` (the trust region's seed; absent: none)."""
    try:
        points = tuple(tuple(int(_number("cost_prior verified_depths", v, "int")) for v in p)
                       for p in value)
    except TypeError:
        points = ((),)
    if any(len(p) != 3 or p[0] < 1 or p[1] < 1 or p[2] < 0 for p in points):
        raise UserError("specsched: adaptive cost_prior verified_depths must be [[B >= 1, "
                        f"ctx >= 1, depth >= 0], ...], got {show_value(value)}")
    return points  # type: ignore[return-value]


def _typical(value: Any) -> float:
    """A typical step's seconds (the online cost model's unit): positive."""
    t = float(_number("cost_prior typical_seconds", value, "float"))
    if t <= 0:
        raise UserError(f"specsched: adaptive cost_prior typical_seconds must be > 0, got {t}")
    return t


def _box(name: str, value: Any) -> tuple[int, int] | None:
    """A cost prior's profiled range `[lo, hi]` (absent: trusted everywhere)."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise UserError(f"specsched: adaptive cost_prior {name} must be [lo, hi], got "
                        f"{show_value(value)}")
    lo, hi = (int(_number(f"cost_prior {name}", v, "int")) for v in value)
    if not 0 <= lo <= hi:
        raise UserError(f"specsched: adaptive cost_prior {name} must have 0 <= lo <= hi, got "
                        f"{show_value(value)}")
    return (lo, hi)


def _profile_prior(path: Any, base: AdaptiveConfig, max_k: int | None) -> AdaptiveConfig:
    if not isinstance(path, str) or not path:
        raise UserError(f"specsched: adaptive profile must be a file path, got {show_value(path)}")
    from specsched.planner import load_profile
    from specsched.planner.adaptive_prior import adaptive_prior

    try:
        profile = load_profile(path)
        if profile.timings:
            return adaptive_prior(profile, base, max_k=max_k)
    except (UserError, ValueError, OSError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"specsched: adaptive profile {path} cannot be read: {msg}") from None
    # An acceptance-only profile (`specsched profile --from-vllm-trace`): no cost prior.
    acceptance = tuple((a.ctx, tuple(a.a)) for a in profile.acceptance)
    return dataclasses.replace(base, acceptance_prior=acceptance)


def parse_adaptive(value: Any) -> tuple[AdaptiveConfig, dict[str, Any]]:
    """(settings with priors, the block as given: what `--additional-config` carries back)."""
    block = {} if value is None else value
    if not isinstance(block, Mapping):
        raise UserError(f"specsched: adaptive must be an object of AdaptiveConfig settings, got "
                        f"{show_value(value)}")
    block = check_keys(block, set(ADAPTIVE_KEYS), "specsched: adaptive")
    refuse_per_request(block.get("per_request_k"), "adaptive ")
    kwargs: dict[str, Any] = {k: _number(k, block[k], TUNABLE[k]) for k in TUNABLE if k in block}
    if "acceptance_prior" in block:
        kwargs["acceptance_prior"] = _acceptance_prior(block["acceptance_prior"])
    if "cost_prior" in block:
        kwargs["cost_prior"] = _cost_prior(block["cost_prior"])
    try:
        cfg = AdaptiveConfig(**kwargs)
        if "profile" in block:
            cfg = _profile_prior(block["profile"], cfg, kwargs.get("max_k"))
            # explicit priors win over the profile's
            cfg = dataclasses.replace(cfg, **{k: kwargs[k] for k in PRIOR_KEYS if k in kwargs})
    except UserError as exc:
        text = str(exc)
        raise UserError(text if text.startswith("specsched") else f"specsched: {text}") from None
    return cfg, dict(block)


def engine_adaptive(cfg: AdaptiveConfig, max_k_given: bool, num_spec_tokens: int,
                    dense_lookup: list[int]) -> AdaptiveConfig:
    """`cfg` checked against the engine (one-line errors); `max_k` defaults to
    `num_speculative_tokens` (at most 16)."""
    n = len(dense_lookup) - 1
    if not max_k_given:
        cfg = dataclasses.replace(cfg, max_k=max(1, min(num_spec_tokens, 16)))
    elif cfg.max_k > num_spec_tokens:
        raise UserError(
            f"specsched: adaptive max_k={cfg.max_k} is above the speculative config's "
            f"num_speculative_tokens={num_spec_tokens}; lower max_k or use the flags of "
            f"`specsched export SCHEDULE --to vllm --policy adaptive --max-k {cfg.max_k} "
            f"--max-num-seqs {n}`")
    missing = sorted(set(range(cfg.max_k + 1)) - set(dense_lookup[1:]))
    if missing:
        raise UserError(
            f"specsched: the adaptive policy may choose any K in 0..{cfg.max_k} but the "
            f"speculative config's num_speculative_tokens_per_batch_size never maps a batch size "
            f"<= {n} to K={missing}; use the --speculative-config of `specsched export SCHEDULE "
            f"--to vllm --policy adaptive --max-k {cfg.max_k} --max-num-seqs {n}`")
    return cfg
