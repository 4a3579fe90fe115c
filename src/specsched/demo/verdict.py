"""The demo's verdict: predicted vs measured speedup per scenario and arm, and what may be claimed.

A claim is made only from the analysis verdicts (whole 95% CI beyond the noise floor); arms that
are the baseline's configuration on a scenario are reported as such, never as a result.
"""

from __future__ import annotations

from typing import Any

from specsched.bench.analysis import Analysis
from specsched.bench.dryrun import DryRun
from specsched.bench.report import json_safe
from specsched.io import atomic_write_json, atomic_write_text


def conclusions(rows: list[dict[str, Any]], an: Analysis) -> list[str]:
    """One sentence per scenario: the arms that win / lose beyond noise, or that none does."""
    out: list[str] = []
    for s in an.scenarios:
        mine = [r for r in rows if r["scenario"] == s.name and r["verdict"] != "baseline"]
        wins = [r for r in mine if r["verdict"] == "win"]
        losses = [r for r in mine if r["verdict"] == "loss"]
        floor = f"noise floor ±{100 * s.floor:.1f}%"
        parts = []
        if wins:
            parts.append("faster than no-spec: " + ", ".join(
                f"{r['arm']} x{r['ratio']:.2f}" for r in wins))
        if losses:
            parts.append("slower: " + ", ".join(f"{r['arm']} x{r['ratio']:.2f}" for r in losses))
        if not parts:
            parts.append("no arm differs from no-spec beyond noise")
        out.append(f"{s.name}: " + "; ".join(parts) + f" ({floor}).")
    for w in an.warnings:
        if "correctness canary" in w:
            out.append(f"WARNING: {w}")
    return out


def write_verdict(path: Any, rows: list[dict[str, Any]], an: Analysis) -> None:
    obj = {"rows": rows, "conclusions": conclusions(rows, an), "warnings": list(an.warnings)}
    atomic_write_json(path, json_safe(obj))


def _fmt(x: float | None, fmt: str) -> str:
    return "n/a" if x is None else format(x, fmt)


def append_verdict_md(path: Any, rows: list[dict[str, Any]], an: Analysis, dry: DryRun) -> None:
    """Add the demo's verdict section (predicted vs measured) to the bench report."""
    lines = ["", "## Demo verdict: predicted (profile) vs measured, speedup vs no-spec", "",
             "| scenario | arm | K | predicted | measured e2e [95% CI] | decode [95% CI] | "
             "verdict |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        ci = "" if r["ci"] is None else f" [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]"
        d = r["decode_ci"]
        dci = "" if d is None else f" [{d[0]:.3f}, {d[1]:.3f}]"
        base = r["verdict"] == "baseline"
        meas = "1 (baseline)" if base else f"{_fmt(r['ratio'], '.3f')}{ci}"
        dec = "1 (baseline)" if base else f"{_fmt(r['decode_ratio'], '.3f')}{dci}"
        verdict = r["verdict"] or ""
        if r["same_config_as_baseline"]:
            verdict += " (same config as no-spec)"
        lines.append(f"| {r['scenario']} | {r['arm']} | {','.join(map(str, r['k']))} | "
                     f"{_fmt(r['predicted_speedup'], '.3f')} | {meas} | {dec} | {verdict} |")
    lines += [""] + [f"- {c}" for c in conclusions(rows, an)] + [""]
    ctl = [f"{s.name}: " + "; ".join(" = ".join(g) for g in s.controls)
           for s in dry.scenarios if s.controls]
    if ctl:
        lines += ["Same configuration (dry-run controls; their differences are noise): "
                  + " | ".join(ctl), ""]
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    atomic_write_text(path, text + "\n".join(lines))
