"""Render a microbenchmark result: atomic JSON, a PNG scatter plot, a rich verdict table."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from specsched.errors import UserError
from specsched.io import atomic_write_bytes, atomic_write_json


def write_json(path: Path, result: dict[str, Any]) -> None:
    try:
        atomic_write_json(path, result, indent=2)
    except OSError as exc:
        raise UserError(f"{path}: cannot write the result: {exc}") from None


def write_plot(path: Path, result: dict[str, Any]) -> None:
    """Median time (with IQR bars) vs Σctx, B·max and B·median, one row per kernel that ran."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ran = [k for k, v in result["kernels"].items() if v["status"] == "ok"]
    if not ran:
        return
    axes_x = (("total_ctx", "Σctx (mean x B)"), ("batch_max", "B x max ctx"),
              ("batch_median", "B x median ctx"))
    fig, axes = plt.subplots(len(ran), 3, figsize=(13, 3.4 * len(ran)), squeeze=False)
    shapes = result["shapes"]
    for row, kernel in enumerate(ran):
        fits = {f["predictor"]: f for f in result["kernels"][kernel]["verdict"]["fits"]}
        verdict = result["kernels"][kernel]["verdict"]
        best, named = verdict["best"], verdict["aggregator"]
        med = [s["timings"][kernel]["median_ms"] for s in shapes]
        err = [
            [m - s["timings"][kernel]["q1_ms"] for m, s in zip(med, shapes)],
            [s["timings"][kernel]["q3_ms"] - m for m, s in zip(med, shapes)],
        ]
        for col, (key, label) in enumerate(axes_x):
            ax = axes[row][col]
            xs = [s[key] for s in shapes]
            sum_group = [s["group"].startswith("sum") for s in shapes]
            for same_sum, marker, name in ((True, "o", "same Σctx"), (False, "^", "same max")):
                idx = [i for i, g in enumerate(sum_group) if g == same_sum]
                ax.errorbar([xs[i] for i in idx], [med[i] for i in idx],
                            yerr=[[err[0][i] for i in idx], [err[1][i] for i in idx]],
                            fmt=marker, ms=4, capsize=2, label=name)
            predictor = "sum" if key == "total_ctx" else key
            fit = fits[predictor]
            lo, hi = min(xs), max(xs)
            ax.plot([lo, hi], [fit["intercept"] + fit["slope"] * lo,
                               fit["intercept"] + fit["slope"] * hi], "k--", lw=1)
            ax.set_xlabel(label)
            ax.set_ylabel("ms / verify step")
            arrow = f"  → {named}" if predictor == best else ""
            ax.set_title(f"{kernel}: R²={fit['r2']:.3f}{arrow}")
            if row == 0 and col == 0:
                ax.legend(fontsize=8)
    meta = result["meta"]
    geo = meta["geometry"]
    fig.suptitle(
        f"verify attention, {geo['name']} ({geo['num_layers']} layers, {geo['num_heads']}/"
        f"{geo['num_kv_heads']} heads, d={geo['head_dim']}), B={meta['grid']['batch_size']}, "
        f"K={meta['num_spec_tokens']}, {meta['dtype']}, {meta['device_name']}"
    )
    fig.tight_layout()
    png = io.BytesIO()
    try:
        fig.savefig(png, format="png", dpi=90)
        atomic_write_bytes(path, png.getvalue())
    except OSError as exc:
        raise UserError(f"{path}: cannot write the plot: {exc}") from None
    finally:
        plt.close(fig)


def render_table(console: Console, result: dict[str, Any]) -> None:
    table = Table(title="verify attention: which context statistic does time follow?")
    for col in ("kernel", "R² sum", "R² max", "R² med", "rmse", "ratio", "boot", "IQR"):
        table.add_column(col, justify="left" if col == "kernel" else "right")
    table.add_column("verdict", no_wrap=True, min_width=12)
    for kernel, info in result["kernels"].items():
        if info["status"] != "ok":
            table.add_row(kernel, "", "", "", "", "", "", "", "skipped")
            continue
        v = info["verdict"]
        r2 = {f["predictor"]: f["r2"] for f in v["fits"]}
        ratio = v["rmse_ratio"]
        table.add_row(
            kernel, f"{r2['sum']:.3f}", f"{r2['batch_max']:.3f}", f"{r2['batch_median']:.3f}",
            f"{v['fits'][0]['rel_rmse']:.1%}", "inf" if ratio is None else f"{ratio:.2f}",
            f"{v['bootstrap_win']:.0%}", f"{info['median_iqr_rel']:.0%}",
            f"[bold]{v['aggregator']}[/bold]",
        )
    console.print(table)
    console.print(
        "  rmse: best fit's residual RMSE / mean time; ratio: runner-up RMSE / best RMSE; "
        "boot: bootstrap win share; IQR: median per-shape IQR / median"
    )
    for kernel, info in result["kernels"].items():
        text = info["verdict"]["reason"] if info["status"] == "ok" else f"skipped: {info['reason']}"
        console.print(f"  {kernel}: {text}", markup=False)
    corr = result["design"]["correlations"]
    console.print("  design correlations: " + ", ".join(f"{k} {v:.2f}" for k, v in corr.items()))
