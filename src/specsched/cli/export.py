"""`specsched export SCHEDULE --to vllm|sglang`: configs for stock serving engines.

`--to vllm` prints copy-pasteable `vllm serve` flags. `--mode auto` (default) is `specsched` for
a schedule with a context axis and `stock` for a batch-only one. `--mode stock` prints only
`--speculative-config` with the batch-only projection, which stock vLLM runs without specsched
installed. `--mode specsched` prints the complete flags for specsched's scheduler class:
`--speculative-config` with a batch-only table holding every K the 2-D schedule emits,
`--scheduler-cls`, `--additional-config` with the schedule, `--max-num-seqs`.
"""

from __future__ import annotations

import argparse
import json
import shlex

from rich.console import Console

from specsched.policy.route import CtxAgg
from specsched.schedule import Schedule, export_sglang, export_vllm, load_schedule

MODES = ("auto", "stock", "specsched")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="print the serving-engine config for a schedule")
    p.add_argument("schedule", help="JSON/YAML file or inline JSON list")
    p.add_argument("--to", choices=["vllm", "sglang"], required=True)
    p.add_argument("--max-k", type=int, default=None, help="clamp K (num_speculative_tokens)")
    p.add_argument("--method", default="ngram", help="vLLM speculative method (default: ngram)")
    p.add_argument("--draft-model", default=None, help="vLLM draft model path, for draft methods")
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
        "specsched for schedules with a context axis, stock for batch-only ones",
    )
    p.add_argument(
        "--max-num-seqs",
        type=int,
        default=None,
        help="vLLM --max-num-seqs the batch-only table is built for (specsched mode; default 256)",
    )
    p.add_argument(
        "--ctx-agg",
        choices=[a.value for a in CtxAgg],
        default=CtxAgg.MEAN.value,
        help="context representative of a step's decode requests (specsched mode; default mean)",
    )
    p.add_argument(
        "--log-every",
        type=int,
        default=0,
        help="specsched mode: log K usage every N scheduler steps (default 0: at shutdown only)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    s = load_schedule(args.schedule, max_k=args.max_k)
    console = Console(stderr=True, highlight=False, soft_wrap=True)  # stdout stays copy-pasteable
    if args.to == "sglang":
        out = export_sglang(s)
        print(json.dumps(out["speculative_adaptive_config"], indent=2))
        for note in out["notes"]:
            console.print(f"note: {note}", markup=False, style="dim")
        return 0
    mode = args.mode
    if mode == "auto":
        mode = "stock" if s.is_batch_only else "specsched"
    if mode == "specsched":
        return _run_specsched(args, s, console)
    out = export_vllm(s, method=args.method, model=args.draft_model, project_ctx=args.project_ctx)
    body = json.dumps(out["speculative_config"], separators=(",", ":"))
    print(f"--speculative-config {shlex.quote(body)}")
    notes = list(out["notes"])
    for note in notes:
        console.print(f"note: {note}", markup=False, style="dim")
    return 0


def _run_specsched(args: argparse.Namespace, s: Schedule, console: Console) -> int:
    from specsched.errors import UserError
    from specsched.integrations.vllm.flags import render_flags, serve_flags
    from specsched.integrations.vllm.table import DEFAULT_MAX_NUM_SEQS
    from specsched.integrations.vllm.version import supported_range_text

    max_num_seqs = args.max_num_seqs if args.max_num_seqs is not None else DEFAULT_MAX_NUM_SEQS
    if max_num_seqs < 1:
        raise UserError(f"--max-num-seqs must be >= 1, got {max_num_seqs}")
    flags = serve_flags(
        s,
        method=args.method,
        model=args.draft_model,
        max_num_seqs=max_num_seqs,
        project_ctx=args.project_ctx,
        ctx_agg=CtxAgg(args.ctx_agg),
        log_every=args.log_every,
    )
    print(render_flags(flags))
    notes = [
        "append to `vllm serve MODEL`; specsched must be importable in vLLM's environment "
        f"(vLLM {supported_range_text()})",
        "the table in --speculative-config holds every K the schedule emits (so vLLM handles "
        f"and captures each); it is built for --max-num-seqs {max_num_seqs}",
    ]
    for note in notes:
        console.print(f"note: {note}", markup=False, style="dim")
    return 0
