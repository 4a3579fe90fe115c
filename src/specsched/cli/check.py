"""`specsched check SCHEDULE`: validate, show the grid, lint."""

from __future__ import annotations

import argparse

from rich.table import Table

from specsched.cli._common import print_json, stdout_console
from specsched.schedule import Schedule, lint_schedule, load_schedule


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="validate a schedule, print its grid and lint warnings")
    p.add_argument("schedule", help="JSON/YAML file or inline JSON list")
    p.add_argument(
        "--max-k", type=int, default=None, help="clamp K (vLLM's num_speculative_tokens)"
    )
    p.add_argument("--strict", action="store_true", help="exit 1 when there are warnings")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def grid_table(s: Schedule, title: str = "K by batch size x context") -> Table:
    table = Table(title=title)
    table.add_column("batch size", justify="right")
    last = len(s.ctx_ranges) - 1
    for c, (lo, hi) in enumerate(s.ctx_ranges):
        table.add_column(f"ctx {lo}+" if c == last else f"ctx {lo}-{hi}", justify="right")
    for (lo, hi), row in zip(s.batch_ranges, s.effective_grid):
        table.add_row(f"{lo}-{hi}", *(str(k) for k in row))
    return table


def run(args: argparse.Namespace) -> int:
    s = load_schedule(args.schedule, max_k=args.max_k)
    warnings = lint_schedule(s)
    if args.json:
        print_json(
            {
                "valid": True,
                "arity": s.arity,
                "max_k": s.max_k,
                "schedule": s.entries(5),
                "k_values": list(s.k_values),
                "warnings": [w.to_json() for w in warnings],
            }
        )
    else:
        console = stdout_console()
        console.print(grid_table(s))
        for w in warnings:
            console.print(f"warning: {w.message} [{w.code.value}]", markup=False)
        console.print(
            f"valid {s.arity}-item schedule: {len(s.batch_ranges)} batch-size range(s) x "
            f"{len(s.ctx_ranges)} context range(s), K in {list(s.k_values)}"
        )
    return 1 if (args.strict and warnings) else 0
