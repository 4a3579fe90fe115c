"""The complete `vllm serve` flags that run a 2-D schedule in stock vLLM (no vLLM import).

`serve_flags` returns (flag, value) pairs: the speculative config with the coverage table (every
K the 2-D schedule emits, see `table.py`), the scheduler class, the schedule itself in
`--additional-config`, and `--max-num-seqs` (the table's pins are computed for it).
`render_flags` quotes them for a POSIX shell. With an adaptive block (`adaptive_block`: the
input's `"policy": "adaptive"` / `"adaptive"`, or `--policy adaptive`), the table holds every K in
0..max_k (the closed loop may choose any of them at any batch size), `num_speculative_tokens` is
max_k, and `--additional-config` carries `"policy": "adaptive"` and the block.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping
from typing import Any

from specsched.errors import UserError
from specsched.integrations.vllm.adaptive_settings import parse_adaptive
from specsched.integrations.vllm.config import ADDITIONAL_CONFIG_KEY, VllmIntegrationConfig
from specsched.integrations.vllm.table import DEFAULT_MAX_NUM_SEQS, coverage_table
from specsched.policy import AdaptiveConfig, PolicyKind
from specsched.policy.route import CtxAgg
from specsched.schedule import Schedule, export_vllm

SCHEDULER_CLS = "specsched.integrations.vllm.ContextAwareScheduler"


def speculative_config(
    s: Schedule,
    method: str = "ngram",
    model: str | None = None,
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS,
    project_ctx: int = 1,
    extra: dict[str, Any] | None = None,
    any_batch_ks: Iterable[int] = (),
) -> dict[str, Any]:
    """`--speculative-config` object: stock fields (and `extra`, the input's other fields: drafter
    parameters...) plus the coverage table for `max_num_seqs` (holding `any_batch_ks` too)."""
    config: dict[str, Any] = export_vllm(s, method=method, model=model, extra=extra)[
        "speculative_config"
    ]
    # num_speculative_tokens caps every K (vLLM clamps its lookup to it): the 2-D schedule's max.
    config["num_speculative_tokens"] = max(s.max_k if s.max_k is not None else s.max_emitted_k, 1)
    config["num_speculative_tokens_per_batch_size"] = coverage_table(s, max_num_seqs, project_ctx,
                                                                     any_batch_ks)
    return config


def serve_flags(
    s: Schedule,
    method: str = "ngram",
    model: str | None = None,
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS,
    project_ctx: int = 1,
    ctx_agg: CtxAgg = CtxAgg.MEAN,
    log_every: int = 0,
    extra: dict[str, Any] | None = None,
    adaptive: Mapping[str, Any] | None = None,
) -> list[tuple[str, str]]:
    """(flag, value) pairs for `vllm serve MODEL ...` running `s` with the scheduler class;
    `adaptive`: the adaptive policy's block (with `max_k`; see `adaptive_block`)."""
    cfg, settings, any_ks = None, None, range(0)
    if adaptive is not None:
        cfg, settings = parse_adaptive(adaptive)  # validates; reads the profile
        s = s.clamped(cfg.max_k)
        any_ks = range(cfg.max_k + 1)
    spec = speculative_config(s, method, model, max_num_seqs, project_ctx, extra, any_ks)
    additional = VllmIntegrationConfig(
        schedule=s, ctx_agg=ctx_agg, log_every=log_every,
        policy=PolicyKind.STATIC if cfg is None else PolicyKind.ADAPTIVE, adaptive=cfg,
        adaptive_settings=settings,
    ).to_additional_config()
    compact = {"separators": (",", ":")}
    return [
        ("--speculative-config", json.dumps(spec, **compact)),  # type: ignore[arg-type]
        ("--scheduler-cls", SCHEDULER_CLS),
        ("--additional-config", json.dumps(additional, **compact)),  # type: ignore[arg-type]
        ("--max-num-seqs", str(max_num_seqs)),
    ]


def render_flags(flags: list[tuple[str, str]]) -> str:
    """One shell line: `--flag 'value' ...` (values quoted with shlex)."""
    return " ".join(f"{flag} {shlex.quote(value)}" for flag, value in flags)


def adaptive_block(
    source: Any,
    s: Schedule,
    policy: str | None = None,
    max_k: int | None = None,
    profile: str | None = None,
) -> tuple[dict[str, Any] | None, list[str]]:
    """(the adaptive block to export, or None for the static policy; notes). `source`: the
    decoded input (its `"policy"` / `"adaptive"`, at the top or under `"specsched"`); the
    flags replace the input's values. `max_k` is always written: the flag, else the input's,
    else the schedule's clamp (the input's num_speculative_tokens), else the larger of the
    schedule's largest K and AdaptiveConfig's default."""
    written: Mapping[str, Any] = {}
    if isinstance(source, Mapping):
        inner = source.get(ADDITIONAL_CONFIG_KEY)
        written = inner if isinstance(inner, Mapping) else source
    kind = policy or written.get("policy") or PolicyKind.STATIC.value
    if kind != PolicyKind.ADAPTIVE.value:
        if profile is not None:
            raise UserError("--profile applies to --policy adaptive only")
        return None, []
    raw = written.get("adaptive")
    if raw is not None and not isinstance(raw, Mapping):
        raise UserError(f"specsched: adaptive must be an object of AdaptiveConfig settings, got "
                        f"{type(raw).__name__}")
    block = dict(raw or {})
    notes: list[str] = []
    if profile is not None:
        if block.get("profile") not in (None, profile):
            notes.append(f"--profile {profile} replaces the input's {block['profile']}")
        block["profile"] = profile
    if max_k is not None:
        block["max_k"] = max_k
    elif "max_k" not in block:
        block["max_k"] = s.max_k if s.max_k else min(16, max(AdaptiveConfig().max_k,
                                                             s.max_emitted_k))
    if "profile" in block:
        notes.append(f"the adaptive prior {block['profile']} is read by the vLLM engine process "
                     "(a relative path: from its working directory)")
    return block, notes
