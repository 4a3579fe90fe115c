"""`specsched route SCHEDULE --ctx ...`: the K a batch would get."""

from __future__ import annotations

import argparse

from specsched.cli._common import parse_int_list, print_json, stdout_console
from specsched.cli.spec_flags import add_ctx_agg_arg, add_hidden_alias, add_per_request_arg
from specsched.errors import UserError
from specsched.policy import BatchState, CtxAgg, PolicyConfig
from specsched.schedule import load_schedule


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("route", help="show the K a schedule picks for one batch")
    p.add_argument("schedule", help="JSON/YAML file or inline JSON list")
    p.add_argument(
        "--ctx",
        required=True,
        help="num_computed_tokens per scheduled request, e.g. 100,100,100,8000",
    )
    p.add_argument(
        "--prompt-lens",
        default=None,
        help="num_prompt_tokens per request (default: every request is decoding)",
    )
    add_ctx_agg_arg(p)
    add_hidden_alias(p, "--agg", "ctx_agg", choices=[a.value for a in CtxAgg])
    add_per_request_arg(p, "K per request from its own context")
    add_hidden_alias(p, "--per-request", "per_request_k", action="store_true")
    p.add_argument("--max-k", type=int, default=None, help="clamp K")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    s = load_schedule(args.schedule, max_k=args.max_k)
    ctx = parse_int_list(args.ctx, "--ctx", minimum=0)
    prompts = None
    if args.prompt_lens is not None:
        prompts = parse_int_list(args.prompt_lens, "--prompt-lens", minimum=0)
        if len(prompts) != len(ctx):
            raise UserError(
                f"--prompt-lens has {len(prompts)} items but --ctx has {len(ctx)}; "
                f"give one prompt length per request"
            )
    policy = PolicyConfig(schedule=s, ctx_agg=CtxAgg(args.ctx_agg),
                          per_request_k=args.per_request_k).build()
    if args.per_request_k:
        # per-request K in its own context's column; no prefill cap: K as the schedule gives it
        ks = policy.decide(BatchState.from_counts(ctx)).num_spec_tokens
        if args.json:
            print_json({"batch_size": len(ctx), "k": list(ks)})
        else:
            stdout_console().print(" ".join(str(k) for k in ks))
        return 0
    decision = policy.decide(BatchState.from_counts(ctx, prompts)).route
    assert decision is not None  # batch mode always routes
    if args.json:
        print_json(decision.to_json())
    else:
        b = decision.bucket
        last = b.ctx_lo == s.ctx_ranges[-1][0]
        ctx_range = f"{b.ctx_lo}+" if last else f"{b.ctx_lo}-{b.ctx_hi}"
        stdout_console().print(
            f"K={decision.k}  (batch size {decision.batch_size}, {decision.pool.value} pool, "
            f"{args.ctx_agg} ctx {decision.ctx_repr}, bucket bs {b.bs_lo}-{b.bs_hi} x ctx "
            f"{ctx_range})"
        )
    return 0
