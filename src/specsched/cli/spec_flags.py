"""The speculative-decoding flags every command shares (`generate`, `profile --engine`, `tune`,
`demo`; `route` and `export` take the K-policy ones they need): the drafter and its settings, and
how K is chosen. One parser helper each way: `add_*_arg(s)` registers the flags (one spelling per
flag; an old one lives on as a hidden alias), `*_from_args` builds the torch-free configs."""

from __future__ import annotations

import argparse
from typing import Any

from specsched.engine.spec.config import DRAFT_DTYPES, SpeculativeConfig
from specsched.errors import UserError
from specsched.policy import AdaptiveConfig, CtxAgg, PolicyConfig, PolicyKind
from specsched.schedule import Schedule, load_schedule

CTX_AGG_HELP = "decode-pool context representative (default mean: verify cost ~ Σctx)"
PER_REQUEST_HELP = ("K per request (ragged verify): from its own context (static), or its own "
                    "goodput-optimal K (adaptive)")
POLICY_HELP = ("static: K from the schedule / --k; adaptive: learn acceptance and step cost "
               "online with the schedule / --k as the prior (default static)")


def add_hidden_alias(p: Any, old: str, dest: str, **kwargs: Any) -> None:
    """An old spelling of a flag that keeps working (README commands, scripts) but is not listed
    in --help. `dest` is the new flag's; the new flag's default stands."""
    p.add_argument(old, dest=dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)


def add_drafter_arg(p: Any, default: str = "streaming") -> None:
    """--drafter: streaming, ngram, model:PATH or none."""
    p.add_argument("--drafter", default=default,
                   help=f"streaming, ngram, model:PATH or none (default {default})")


def add_drafter_args(p: Any, with_drafter: bool = True, default: str = "streaming") -> None:
    """--drafter (unless the command already has one), --window, --sink-tokens, n-gram sizes."""
    if with_drafter:
        add_drafter_arg(p, default)
    p.add_argument("--window", type=int, default=256,
                   help="streaming drafter: recent KV window, tokens (default 256)")
    p.add_argument("--sink-tokens", type=int, default=4,
                   help="streaming drafter: attention-sink tokens (default 4)")
    p.add_argument("--prompt-lookup-min", type=int, default=1, help="ngram drafter: shortest n")
    p.add_argument("--prompt-lookup-max", type=int, default=4, help="ngram drafter: longest n")
    p.add_argument("--draft-dtype", default="auto", choices=list(DRAFT_DTYPES),
                   help="weights the streaming / model drafter reads: auto (default: int8 "
                   "where its native kernel builds, else bf16 where the CPU has AVX512_BF16 or "
                   "AMX, else fp32), float32, bfloat16 or int8")


def add_ctx_agg_arg(p: Any, default: str | None = CtxAgg.MEAN.value,
                    help_text: str = CTX_AGG_HELP) -> None:
    """--ctx-agg mean|median|max."""
    p.add_argument("--ctx-agg", default=default, choices=[a.value for a in CtxAgg], help=help_text)


def add_per_request_arg(p: Any, help_text: str = PER_REQUEST_HELP) -> None:
    """--per-request-k: K per request instead of one K per step."""
    p.add_argument("--per-request-k", action="store_true", help=help_text)


def add_policy_kind_arg(p: Any, default: str | None = PolicyKind.STATIC.value,
                        help_text: str = POLICY_HELP) -> None:
    """--policy static|adaptive."""
    p.add_argument("--policy", default=default, choices=[k.value for k in PolicyKind],
                   help=help_text)


def add_policy_args(p: argparse.ArgumentParser) -> None:
    """How K is chosen: --schedule FILE|JSON or --k N (static), --ctx-agg, --per-request-k,
    --policy (+ --profile, --max-k for the adaptive one)."""
    src = p.add_mutually_exclusive_group()
    src.add_argument("--schedule", help="K schedule: a file or inline JSON ([[1,4,3],[5,64,1]])")
    src.add_argument("--k", type=int, default=None, help="static K (a one-cell schedule)")
    add_ctx_agg_arg(p)
    add_per_request_arg(p)
    add_policy_kind_arg(p)
    p.add_argument("--profile", default=None,
                   help="adaptive: a profile.json (`specsched profile`) whose step costs and "
                   "acceptance are the priors (else learned from scratch)")
    p.add_argument("--max-k", type=int, default=None,
                   help="adaptive: the largest K tried (default: the profile's, else 4)")


def policy_from_args(args: argparse.Namespace) -> PolicyConfig:
    """The policy the flags describe; no --schedule / --k: K = 0 everywhere."""
    if args.schedule is not None:
        schedule = load_schedule(args.schedule)
    else:
        schedule = Schedule.constant(0 if args.k is None else args.k)
    kind = PolicyKind(args.policy)
    if kind is PolicyKind.STATIC:
        if args.profile is not None or args.max_k is not None:
            raise UserError("--profile and --max-k apply to --policy adaptive only")
        return PolicyConfig(schedule=schedule, ctx_agg=CtxAgg(args.ctx_agg),
                            per_request_k=args.per_request_k)
    return PolicyConfig(schedule=schedule, ctx_agg=CtxAgg(args.ctx_agg),
                        per_request_k=args.per_request_k, kind=kind,
                        adaptive=adaptive_from_args(args.profile, args.max_k))


def adaptive_from_args(profile: str | None, max_k: int | None) -> AdaptiveConfig:
    """Adaptive settings: priors from a profile when given."""
    if max_k is not None and not 1 <= max_k <= 16:
        raise UserError(f"--max-k must be in [1, 16], got {max_k}")
    if profile is None:
        return AdaptiveConfig(max_k=max_k or 4)
    from specsched.planner import load_profile
    from specsched.planner.adaptive_prior import adaptive_prior

    return adaptive_prior(load_profile(profile), max_k=max_k)


def speculative_from_args(args: argparse.Namespace,
                          policy: PolicyConfig | None = None) -> SpeculativeConfig:
    """The drafter flags + a policy (default: the policy flags, or static K = 4 for commands
    that replace the policy themselves, like profiling)."""
    if policy is None:
        policy = policy_from_args(args) if hasattr(args, "ctx_agg") else PolicyConfig.constant(4)
    return SpeculativeConfig.from_flags(
        args.drafter, policy, window=args.window, num_sink_tokens=args.sink_tokens,
        prompt_lookup_min=args.prompt_lookup_min, prompt_lookup_max=args.prompt_lookup_max,
        draft_dtype=args.draft_dtype,
    )
