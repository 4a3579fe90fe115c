"""`specsched export SCHEDULE --to vllm|sglang`: configs for stock serving engines."""

from __future__ import annotations

import argparse
import json

from rich.console import Console

from specsched.schedule import export_sglang, export_vllm, load_schedule


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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    s = load_schedule(args.schedule, max_k=args.max_k)
    console = Console(stderr=True, highlight=False, soft_wrap=True)  # stdout stays copy-pasteable
    if args.to == "vllm":
        out = export_vllm(
            s, method=args.method, model=args.draft_model, project_ctx=args.project_ctx
        )
        body = json.dumps(out["speculative_config"], separators=(",", ":"))
        print(f"--speculative-config '{body}'")
    else:
        out = export_sglang(s)
        print(json.dumps(out["speculative_adaptive_config"], indent=2))
    for note in out["notes"]:
        console.print(f"note: {note}", markup=False, style="dim")
    return 0
