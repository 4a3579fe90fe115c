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


# A terminal shows this much of a grid; larger schedules print a corner of it (--json has all).
MAX_SHOWN_ROWS = 40
MAX_SHOWN_COLS = 12
MAX_SHOWN_WARNINGS = 20


def grid_table(s: Schedule, title: str = "K by batch size x context") -> Table:
    """The grid, or its top-left corner (MAX_SHOWN_ROWS x MAX_SHOWN_COLS) for a large one."""
    rows, cols = len(s.batch_ranges), len(s.ctx_ranges)
    if rows > MAX_SHOWN_ROWS or cols > MAX_SHOWN_COLS:
        title += (f" (first {min(rows, MAX_SHOWN_ROWS)} of {rows} rows x "
                  f"{min(cols, MAX_SHOWN_COLS)} of {cols} columns; --json lists every entry)")
    table = Table(title=title)
    table.add_column("batch size", justify="right")
    last = cols - 1
    for c, (lo, hi) in enumerate(s.ctx_ranges[:MAX_SHOWN_COLS]):
        table.add_column(f"ctx {lo}+" if c == last else f"ctx {lo}-{hi}", justify="right")
    for (lo, hi), row in zip(s.batch_ranges[:MAX_SHOWN_ROWS], s.effective_grid, strict=False):
        table.add_row(f"{lo}-{hi}", *(str(k) for k in row[:MAX_SHOWN_COLS]))
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
        for w in warnings[:MAX_SHOWN_WARNINGS]:
            console.print(f"warning: {w.message} [{w.code.value}]", markup=False)
        if len(warnings) > MAX_SHOWN_WARNINGS:
            console.print(f"... and {len(warnings) - MAX_SHOWN_WARNINGS} more warnings "
                          f"(--json lists all)", markup=False)
        console.print(
            f"valid {s.arity}-item schedule: {len(s.batch_ranges)} batch-size range(s) x "
            f"{len(s.ctx_ranges)} context range(s), K in {list(s.k_values)}"
        )
    return 1 if (args.strict and warnings) else 0
