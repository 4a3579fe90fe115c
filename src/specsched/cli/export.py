"""`specsched export SCHEDULE --to vllm|sglang`: configs for stock serving engines.

`--to vllm` prints copy-pasteable `vllm serve` flags. `--mode auto` (default) is `specsched` for
a schedule with a context axis and `stock` for a batch-only one. `--mode stock` prints only
`--speculative-config` with the batch-only projection, which stock vLLM runs without specsched
installed. `--mode specsched` prints the complete flags for specsched's scheduler class:
`--speculative-config` with a batch-only table holding every K the 2-D schedule emits,
`--scheduler-cls`, `--additional-config` with the schedule, `--max-num-seqs`.
Every field of an input speculative config (method, draft model, drafter parameters, `ctx_agg`,
`num_speculative_tokens` as max K) is carried over; a flag given explicitly replaces the input's
value, with a note. `--to sglang` prints the `ctx_buckets` form (SGLang PR #31716) for a schedule
with a context axis; `--mode stock` the candidates form stock SGLang reads. `--policy adaptive`
(or `"policy": "adaptive"` in an input `--additional-config` object) exports the closed-loop
policy: a table holding every K in 0..--max-k, and the `adaptive` block (`--profile`: its priors).
"""

from __future__ import annotations

import argparse
import json
import shlex

from rich.console import Console

from specsched.cli.spec_flags import add_ctx_agg_arg, add_policy_kind_arg
from specsched.errors import UserError
from specsched.policy.route import CtxAgg
from specsched.schedule import (
    ServingSpec,
    export_sglang,
    export_vllm,
    load_serving_spec,
    read_schedule_source,
)

MODES = ("auto", "stock", "specsched")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="print the serving-engine config for a schedule")
    p.add_argument("schedule", help="JSON/YAML file or inline JSON list")
    p.add_argument("--to", choices=["vllm", "sglang"], required=True)
    p.add_argument("--max-k", type=int, default=None, help="clamp K (num_speculative_tokens)")
    p.add_argument("--method", default=None,
                   help="vLLM speculative method (default: the input's, else ngram)")
    p.add_argument("--draft-model", default=None,
                   help="vLLM draft model path, for draft methods (default: the input's `model`)")
    p.add_argument(
        "--project-ctx",
        type=int,
        default=1,
        help="5-item schedules: context whose K the batch-only projection keeps "
        "(default 1: the shortest-context column)",
    )
    p.add_argument(
        "--mode",
        choices=MODES,
        default="auto",
        help="vLLM: 'stock' prints the batch-only --speculative-config; 'specsched' the complete "
        "flags running the 2-D schedule with specsched's scheduler class; 'auto' (default): "
        "specsched for schedules with a context axis, stock for batch-only ones. SGLang: 'stock' "
        "prints candidates per slot instead of ctx_buckets",
    )
    p.add_argument(
        "--max-num-seqs",
        type=int,
        default=None,
        help="vLLM --max-num-seqs the batch-only table is built for (specsched mode; default 256)",
    )
    add_ctx_agg_arg(p, default=None, help_text="context representative of a step's decode "
                    "requests (specsched mode; default: the input's ctx_agg, else mean)")
    p.add_argument(
        "--log-every",
        type=int,
        default=0,
        help="specsched mode: log K usage every N scheduler steps (default 0: at shutdown only)",
    )
    add_policy_kind_arg(p, default=None, help_text="vLLM: 'adaptive' runs the closed-loop K "
                        "policy with the schedule as its prior, K in 0..--max-k (default: the "
                        "input's `policy`, else static)")
    p.add_argument("--profile", default=None,
                   help="--policy adaptive: profile.json whose step cost and acceptance are the "
                   "policy's priors (the path the vLLM server reads)")
    p.set_defaults(func=run)


def _resolved(flag: str | None, written: str | None, name: str, notes: list[str]) -> str | None:
    """The explicit flag, else the input's value; a note when the flag replaces another value."""
    if flag is not None and written is not None and flag != written:
        notes.append(f"{name} {flag} replaces the input's {written}")
    return flag if flag is not None else written


def _ctx_agg(value: str | None) -> CtxAgg:
    try:
        return CtxAgg(value or CtxAgg.MEAN.value)
    except ValueError:
        choices = ", ".join(a.value for a in CtxAgg)
        raise UserError(f"ctx_agg must be one of {choices}, got {value!r}") from None


def run(args: argparse.Namespace) -> int:
    spec = load_serving_spec(args.schedule, max_k=args.max_k)
    s = spec.schedule
    console = Console(stderr=True, highlight=False, soft_wrap=True)  # stdout stays copy-pasteable
    notes: list[str] = []
    if args.to == "sglang":
        if args.policy == "adaptive" or args.profile is not None:
            raise UserError("--policy adaptive and --profile apply to --to vllm only")
        out = export_sglang(s, context_axis=args.mode != "stock")
        print(json.dumps(out["speculative_adaptive_config"], indent=2))
        _print_notes(console, [*notes, *out["notes"]])
        return 0
    method = _resolved(args.method, spec.method, "--method", notes) or "ngram"
    model = _resolved(args.draft_model, spec.model, "--draft-model", notes)
    ctx_agg = _ctx_agg(_resolved(args.ctx_agg, spec.ctx_agg, "--ctx-agg", notes))
    extra = {k: v for k, v in spec.fields if k not in ("method", "model")}
    from specsched.integrations.vllm.flags import adaptive_block

    adaptive, adaptive_notes = adaptive_block(read_schedule_source(args.schedule), s,
                                              args.policy, args.max_k, args.profile)
    notes += adaptive_notes
    mode = args.mode
    if mode == "auto":
        mode = "stock" if s.is_batch_only and adaptive is None else "specsched"
    if mode == "specsched":
        return _run_specsched(args, spec, (method, model, ctx_agg, extra), console, notes,
                              adaptive)
    if adaptive is not None:
        raise UserError("the adaptive policy needs specsched's scheduler class: use --mode "
                        "specsched (stock vLLM only reads a batch-only table)")
    out = export_vllm(s, method=method, model=model, project_ctx=args.project_ctx, extra=extra)
    body = json.dumps(out["speculative_config"], separators=(",", ":"))
    print(f"--speculative-config {shlex.quote(body)}")
    if spec.ctx_agg is not None or args.ctx_agg is not None:
        notes.append(f"ctx_agg={ctx_agg.value} is not a stock vLLM key (no context axis there): "
                     "dropped; `--mode specsched` keeps it")
    _print_notes(console, [*notes, *out["notes"]])
    return 0


def _print_notes(console: Console, notes: list[str]) -> None:
    for note in notes:
        console.print(f"note: {note}", markup=False, style="dim")


def _run_specsched(
    args: argparse.Namespace,
    spec: ServingSpec,
    resolved: tuple[str, str | None, CtxAgg, dict[str, object]],
    console: Console,
    notes: list[str],
    adaptive: dict[str, object] | None = None,
) -> int:
    from specsched.integrations.vllm.flags import render_flags, serve_flags
    from specsched.integrations.vllm.table import DEFAULT_MAX_NUM_SEQS, MAX_TABLE_NUM_SEQS
    from specsched.integrations.vllm.version import supported_range_text

    method, model, ctx_agg, extra = resolved
    max_num_seqs = args.max_num_seqs if args.max_num_seqs is not None else DEFAULT_MAX_NUM_SEQS
    if not 1 <= max_num_seqs <= MAX_TABLE_NUM_SEQS:
        raise UserError(f"--max-num-seqs must be in [1, {MAX_TABLE_NUM_SEQS}] (the table has an "
                        f"entry per batch size), got {max_num_seqs}")
    flags = serve_flags(
        spec.schedule,
        method=method,
        model=model,
        max_num_seqs=max_num_seqs,
        project_ctx=args.project_ctx,
        ctx_agg=ctx_agg,
        log_every=args.log_every,
        extra=extra,
        adaptive=adaptive,
    )
    print(render_flags(flags))
    notes += [
        "append to `vllm serve MODEL`; specsched must be importable in vLLM's environment "
        f"(vLLM {supported_range_text()})",
        "the table in --speculative-config holds every K the "
        f"{'schedule emits' if adaptive is None else 'adaptive policy may choose'} (so vLLM "
        f"handles and captures each); it is built for --max-num-seqs {max_num_seqs}",
    ]
    _print_notes(console, notes)
    return 0
