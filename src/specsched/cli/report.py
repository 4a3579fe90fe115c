"""`specsched report results.jsonl [--out DIR]`: verdict table, markdown report, PNG charts."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.table import Table

from specsched.cli._common import print_json, stdout_console
from specsched.errors import UserError


def register(sub: Any) -> None:
    p = sub.add_parser("report", help="analyze a bench results file: CIs, noise floor, verdicts")
    p.add_argument("results", type=Path, help="results JSONL written by `specsched bench`")
    p.add_argument("--out", type=Path, help="report directory (default: <results>-report)")
    p.add_argument("--metric", default="output_tok_s",
                   choices=["output_tok_s", "ttft_s_median", "itl_s_median", "wall_s"])
    p.add_argument("--no-charts", action="store_true", help="skip the PNG charts")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--ignore-corrupt-tail", action="store_true",
                   help="analyze a file whose last line is cut off (the line is reported, unused)")
    p.add_argument("--allow-duplicates", action="store_true",
                   help="analyze a file holding a measured trial key twice (keeps the first)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from specsched.bench.analysis import Metric, analysis_to_json, analyze
    from specsched.bench.report import fmt_pct, fmt_ratio, json_safe, verdict_text, write_report
    from specsched.bench.results import read_results

    results = read_results(args.results, allow_corrupt_tail=args.ignore_corrupt_tail)
    try:
        an = analyze(results, Metric(args.metric), allow_duplicates=args.allow_duplicates)
    except UserError as exc:
        raise UserError(f"{args.results}: {exc}") from None
    out = args.out or args.results.with_name(args.results.stem + "-report")
    paths = write_report(an, out, charts=not args.no_charts)
    if args.json:
        print_json(json_safe(analysis_to_json(an)))
        return 0
    con = stdout_console()
    if results.corrupt_tail is not None:
        t = results.corrupt_tail
        con.print(f"[bold red]warning:[/] line {t.line_no} ignored: {t.reason}", markup=True)
    for w in an.warnings:
        con.print(f"[bold red]warning:[/] {w}", markup=True)
    for s in an.scenarios:
        table = Table(title=f"{s.name}: noise floor ±{fmt_pct(s.floor)}")
        for col in ("arm", "n", "failed", f"median {an.metric.value}", "spread",
                    f"vs {an.baseline} [95% CI]", "verdict"):
            table.add_column(col)
        for r in s.rows:
            table.add_row(r.arm, str(r.summary.n), str(r.failed), f"{r.summary.median:.4g}",
                          fmt_pct(r.summary.spread), fmt_ratio(r), verdict_text(r))
        con.print(table)
    con.print(f"report: {', '.join(str(p) for p in paths)}")
    return 0
