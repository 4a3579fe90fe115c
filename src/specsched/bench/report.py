"""Render an `Analysis` as markdown (and JSON-safe data); write the report directory atomically."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from specsched.bench.analysis import Analysis, ArmRow, ScenarioAnalysis, analysis_to_json
from specsched.errors import UserError
from specsched.io import atomic_write_text


def fmt_pct(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.1%}"


def fmt_ratio(row: ArmRow) -> str:
    r = row.ratio
    if r is None:
        return "baseline" if not row.same_config_as_baseline else "n/a"
    return f"{r.ratio:.3f} [{r.lo:.3f}, {r.hi:.3f}]"


def verdict_text(row: ArmRow) -> str:
    if row.verdict is None:
        return ""
    return row.verdict.value + (" (same config as baseline)" if row.same_config_as_baseline else "")


def _scenario_md(s: ScenarioAnalysis, an: Analysis) -> list[str]:
    lines = [f"## {s.name}", ""]
    if s.all_controls:
        lines += ["**Every arm runs the same configuration here: differences are noise.**", ""]
    lines += [
        f"Noise floor ±{fmt_pct(s.floor)} (controls {fmt_pct(s.control_floor)}, "
        f"replicate spread {fmt_pct(s.replicate_floor)}).", "",
        f"| arm | n | failed | median {an.metric.value} | spread | vs {an.baseline} (95% CI) "
        "| verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in s.rows:
        lines.append(f"| {r.arm} | {r.summary.n} | {r.failed} | {r.summary.median:.4g} | "
                     f"{fmt_pct(r.summary.spread)} | {fmt_ratio(r)} | {verdict_text(r)} |")
    if s.control_ratios:
        lines += ["", "Control pairs (same K at every token; must tie): " + ", ".join(
            f"{a}/{b} = {ratio:.3f}" for a, b, ratio in s.control_ratios)]
    pos = ", ".join(f"{p}: {v:+.1%}" for p, v in s.order.by_position.items())
    p_txt = "n/a" if not math.isfinite(s.order.p_value) else f"{s.order.p_value:.3g}"
    lines += ["", f"Order bias by run position: {pos}; slope {s.order.slope:+.2%}/position "
                  f"(p={p_txt}).", ""]
    return lines


def render_markdown(an: Analysis, charts: list[str]) -> str:
    lines = [
        f"# specsched bench report: {an.experiment}", "",
        f"Experiment hash `{an.experiment_hash}`; metric `{an.metric.value}` "
        f"({'higher' if an.metric.higher_is_better else 'lower'} is better); baseline "
        f"`{an.baseline}`.", "",
        "Ratios are geometric-mean ratios, paired by replicate, with percentile-bootstrap 95% "
        "CIs. A verdict is `win`/`loss` only when the whole CI clears the noise floor "
        "(the larger of the largest control-pair difference and the replicate-spread floor "
        "1.96·sqrt(2/n)·sd(log)). `failed`: measured trials recorded as failed (e.g. a server "
        "reply that broke the rules), excluded from every number.", "",
    ]
    if an.warnings:
        lines += ["## Warnings", ""] + [f"- **{w}**" for w in an.warnings] + [""]
    for s in an.scenarios:
        lines += _scenario_md(s, an)
    if charts:
        lines += ["## Charts", ""] + [f"![{c}]({c})" for c in charts] + [""]
    return "\n".join(lines)


def json_safe(obj: Any) -> Any:
    """NaN/inf -> None, recursively (strict JSON)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def write_report(an: Analysis, out_dir: Path, charts: bool = True) -> list[Path]:
    """report.md, summary.json and (optionally) the PNG charts under `out_dir`; a folder that
    cannot be created or written is a one-line UserError."""
    try:
        return _write_report(an, out_dir, charts)
    except OSError as exc:
        why = exc.strerror or str(exc)
        if isinstance(exc, (FileExistsError, NotADirectoryError)):
            why += " (a regular file is in the way)"
        msg = f"report folder {out_dir}: cannot write: {why}; pick another --out"
        raise UserError(msg) from None


def _write_report(an: Analysis, out_dir: Path, charts: bool) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if charts and an.scenarios:
        from specsched.bench.charts import write_charts

        written += write_charts(an, out_dir)
    md = render_markdown(an, [p.name for p in written])
    atomic_write_text(out_dir / "report.md", md)
    atomic_write_text(out_dir / "summary.json",
                      json.dumps(json_safe(analysis_to_json(an)), indent=2))
    return [out_dir / "report.md", out_dir / "summary.json", *written]
