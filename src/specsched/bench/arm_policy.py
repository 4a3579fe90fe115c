"""An experiment arm's K policy: `policy: static` (the default: K from `schedule` / `k`) or
`policy: adaptive` with optional `adaptive:` settings, e.g.

    - name: adaptive
      k: 2                      # the prior (K new requests start from)
      per_request_k: true
      policy: adaptive
      adaptive: {profile: profile.json, max_k: 3}   # priors from a profile (path: relative to
                                                    # the experiment file), any AdaptiveConfig key

`policy_to_obj` is the canonical form the experiment hash covers (priors included, so an arm whose
profile changed is a different arm).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from specsched.errors import UserError
from specsched.io import check_keys
from specsched.planner import load_profile
from specsched.planner.adaptive_prior import adaptive_prior
from specsched.policy import AdaptiveConfig, CtxAgg, PolicyConfig, PolicyKind
from specsched.schedule import Schedule

TUNABLE = {f.name for f in dataclasses.fields(AdaptiveConfig)} - {"cost_prior",
                                                                  "acceptance_prior"}


def parse_policy(obj: dict[str, Any], schedule: Schedule, ctx_agg: CtxAgg, per_request: bool,
                 base_dir: Path, where: str) -> PolicyConfig:
    """The arm's PolicyConfig from its `policy` / `adaptive` keys."""
    try:
        kind = PolicyKind(obj.get("policy", PolicyKind.STATIC.value))
    except ValueError:
        raise UserError(f"{where}: `policy` must be static or adaptive") from None
    if kind is PolicyKind.STATIC:
        if obj.get("adaptive") is not None:
            raise UserError(f"{where}: `adaptive` settings need `policy: adaptive`")
        return PolicyConfig(schedule=schedule, ctx_agg=ctx_agg, per_request_k=per_request)
    raw = check_keys(obj.get("adaptive") or {}, TUNABLE | {"profile"}, f"{where}: adaptive")
    profile = raw.pop("profile", None)
    try:
        cfg = AdaptiveConfig(**raw)
    except TypeError as exc:
        raise UserError(f"{where}: adaptive: {exc}") from None
    if profile is not None:
        if not isinstance(profile, str):
            raise UserError(f"{where}: adaptive: `profile` must be a file path")
        path = Path(profile) if Path(profile).is_absolute() else base_dir / profile
        cfg = adaptive_prior(load_profile(path), cfg, max_k=raw.get("max_k"))
    return PolicyConfig(schedule=schedule, ctx_agg=ctx_agg, per_request_k=per_request,
                        kind=kind, adaptive=cfg)


def policy_to_obj(policy: PolicyConfig) -> dict[str, Any]:
    """`policy` and, for an adaptive arm, every setting and prior (JSON-ready)."""
    if not policy.is_adaptive:
        return {"policy": policy.kind.value}
    cfg = policy.adaptive_config
    settings = {name: getattr(cfg, name) for name in sorted(TUNABLE)}
    return {
        "policy": policy.kind.value,
        "adaptive": {
            **settings,
            "cost_prior": None if cfg.cost_prior is None else cfg.cost_prior.to_json(),
            "acceptance_prior": [[c, list(a)] for c, a in cfg.acceptance_prior],
        },
    }
