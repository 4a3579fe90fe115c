"""The demo's verdict: predicted vs measured speedup per scenario and arm, and what may be claimed.

A claim is made only from the analysis verdicts (whole 95% CI beyond the noise floor); arms that
are the baseline's configuration on a scenario are reported as such, never as a result.
Predictions are claims too: each is checked against its measurement (`prediction_check`): the
error pred/meas - 1 against issue 15's +-7 %, whether the prediction lies inside the measured 95%
CI, and whether the band the profile's acceptance sample allows overlaps that CI — when neither
holds, the prediction is wrong beyond what both samples explain. The model check
(`demo.replay`): the same error for the speedup predicted again with the run's own acceptance,
i.e. of the cost model and the simulation alone; what separates the two errors is the text
sample (the profile's documents accepted differently from the run's).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specsched.bench.analysis import Analysis
from specsched.bench.dryrun import DryRun
from specsched.bench.report import json_safe
from specsched.io import atomic_write_json, atomic_write_text
from specsched.planner.profile import NOISY_REL_SPREAD

TOLERANCE = 0.07  # issue 15: predicted within +-7 % of measured


def prediction_error(row: dict[str, Any], key: str = "predicted_speedup") -> float | None:
    """pred/meas - 1 of a non-baseline row with both (None otherwise); `key`
    "replayed_speedup": the model check's."""
    if row["verdict"] == "baseline" or row["ratio"] is None or row.get(key) is None:
        return None
    return float(row[key] / row["ratio"] - 1.0)


def _errors(rows: list[dict[str, Any]], key: str) -> str:
    errs = [abs(e) for r in rows if (e := prediction_error(r, key)) is not None]
    if not errs:
        return ""
    within = sum(e <= TOLERANCE for e in errs)
    return (f"mean |pred/meas - 1| {100 * sum(errs) / len(errs):.1f}%, max "
            f"{100 * max(errs):.1f}%; within ±{100 * TOLERANCE:.0f}%: {within} of {len(errs)}")


def _overlaps(band: list[float] | None, ci: list[float] | None) -> bool:
    return band is not None and ci is not None and band[0] <= ci[1] and ci[0] <= band[1]


def prediction_check(rows: list[dict[str, Any]]) -> str:
    """One sentence: how far the predictions were from the measurements, and whether the misses
    are beyond what the samples explain."""
    checked = [r for r in rows if prediction_error(r) is not None]
    if not checked:
        return "predictions: nothing to check (no measured arm besides the baseline)"
    n = len(checked)
    inside = sum(r["ci"][0] <= r["predicted_speedup"] <= r["ci"][1] for r in checked)
    band = sum(_overlaps(r.get("predicted_band"), r["ci"]) for r in checked)
    out = (f"predictions: {_errors(checked, 'predicted_speedup')}; inside the measured 95% CI: "
           f"{inside} of {n}; acceptance band overlapping it: {band} of {n}")
    model = _errors(checked, "replayed_speedup")
    if model:
        out += (f". Model check (predicted again with the run's own acceptance: the cost model "
                f"and simulation alone): {model}")
    return out


def profile_noise_note(noisy: list[tuple[int, int, float]]) -> list[str]:
    """A sentence naming the profile's timing units that stayed noisy (`Profile.noisy_units`):
    the step costs behind the predictions are less certain there."""
    if not noisy:
        return []
    units = ", ".join(f"B={b} x ctx {c} ({100 * n:.0f}%)" for b, c, n in noisy)
    return [f"profile: timing units still noisy after re-measuring (median relative IQR above "
            f"{100 * NOISY_REL_SPREAD:.0f}%): {units}; predictions from their step costs are "
            f"less certain (a noisy stretch of the machine overstates speculation's cost)"]


def conclusions(rows: list[dict[str, Any]], an: Analysis,
                notes: Sequence[str] = ()) -> list[str]:
    """One sentence per scenario: the arms that win / lose beyond noise, or that none does; the
    prediction check, and `notes` (e.g. `profile_noise_note`) after it."""
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
    out.append(prediction_check(rows))
    out.extend(notes)
    for w in an.warnings:
        if "correctness canary" in w:
            out.append(f"WARNING: {w}")
    return out


def write_verdict(path: Any, rows: list[dict[str, Any]], an: Analysis,
                  notes: Sequence[str] = ()) -> None:
    obj = {"rows": rows, "conclusions": conclusions(rows, an, notes),
           "warnings": list(an.warnings)}
    atomic_write_json(path, json_safe(obj))


def _fmt(x: float | None, fmt: str) -> str:
    return "n/a" if x is None else format(x, fmt)


def append_verdict_md(path: Any, rows: list[dict[str, Any]], an: Analysis, dry: DryRun,
                      notes: Sequence[str] = ()) -> None:
    """Add the demo's verdict section (predicted vs measured) to the bench report."""
    lines = ["", "## Demo verdict: predicted (profile) vs measured, speedup vs no-spec", "",
             "| scenario | arm | K | predicted [acceptance band] | measured e2e [95% CI] | "
             "pred/meas - 1 | with the run's acceptance (pred/meas - 1) | decode [95% CI] | "
             "verdict |",
             "|---|---|---|---|---|---|---|---|---|"]
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
        b = r.get("predicted_band")
        pred = _fmt(r["predicted_speedup"], ".3f") + (
            "" if base or b is None else f" [{b[0]:.3f}, {b[1]:.3f}]")
        err = prediction_error(r)
        e = "" if err is None else f"{100 * err:+.1f}%"
        rerr = prediction_error(r, "replayed_speedup")
        rep = "" if rerr is None else f"{r['replayed_speedup']:.3f} ({100 * rerr:+.1f}%)"
        lines.append(f"| {r['scenario']} | {r['arm']} | {','.join(map(str, r['k']))} | "
                     f"{pred} | {meas} | {e} | {rep} | {dec} | {verdict} |")
    lines += [""] + [f"- {c}" for c in conclusions(rows, an, notes)] + [""]
    ctl = [f"{s.name}: " + "; ".join(" = ".join(g) for g in s.controls)
           for s in dry.scenarios if s.controls]
    if ctl:
        lines += ["Same configuration (dry-run controls; their differences are noise): "
                  + " | ".join(ctl), ""]
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    atomic_write_text(path, text + "\n".join(lines))
