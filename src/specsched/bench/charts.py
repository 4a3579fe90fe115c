"""PNG charts for `specsched report` (matplotlib, Agg, imported lazily)."""

from __future__ import annotations

from pathlib import Path

from specsched.bench.analysis import Analysis
from specsched.bench.stats import bootstrap_mean_ci


def write_charts(an: Analysis, out_dir: Path) -> list[Path]:
    """`<metric>_by_context.png` (geometric mean per arm with 95% CI, x = mean prompt tokens) and
    `ratio_vs_baseline.png` (ratio with CI per scenario, the noise floor shaded)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths: list[Path] = []
    arms = [r.arm for r in an.scenarios[0].rows] if an.scenarios else []
    fig, ax = plt.subplots(figsize=(8, 5))
    for arm in arms:
        xs, ys, lo, hi = [], [], [], []
        for s in an.scenarios:
            row = next(r for r in s.rows if r.arm == arm)
            vals = an.values.get((s.name, arm), ())
            if not vals or row.mean_prompt_tokens != row.mean_prompt_tokens:  # nan check
                continue
            m, a, b = bootstrap_mean_ci(vals)
            xs.append(row.mean_prompt_tokens)
            ys.append(m)
            lo.append(m - a)
            hi.append(b - m)
        order = sorted(range(len(xs)), key=xs.__getitem__)
        ax.errorbar([xs[i] for i in order], [ys[i] for i in order],
                    yerr=[[lo[i] for i in order], [hi[i] for i in order]],
                    marker="o", capsize=3, label=arm)
    ax.set_xlabel("context: mean prompt tokens per request")
    ax.set_ylabel(f"{an.metric.value} (geometric mean, 95% CI)")
    ax.set_title(f"{an.experiment}: {an.metric.value} by context")
    ax.legend()
    ax.grid(alpha=0.3)
    path = out_dir / f"{an.metric.value}_by_context.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    paths.append(path)

    others = [a for a in arms if a != an.baseline]
    fig, ax = plt.subplots(figsize=(min(14, max(6, 1.6 * len(an.scenarios))), 5))
    width = 0.8 / max(1, len(others))
    for j, arm in enumerate(others):
        xs, ys, err_lo, err_hi = [], [], [], []
        for i, s in enumerate(an.scenarios):
            row = next(r for r in s.rows if r.arm == arm)
            if row.ratio is None:
                continue
            xs.append(i + (j - (len(others) - 1) / 2) * width)
            ys.append(row.ratio.ratio)
            err_lo.append(row.ratio.ratio - row.ratio.lo)
            err_hi.append(row.ratio.hi - row.ratio.ratio)
        ax.errorbar(xs, ys, yerr=[err_lo, err_hi], fmt="o", capsize=4, label=arm)
    for i, s in enumerate(an.scenarios):
        ax.fill_between([i - 0.45, i + 0.45], 1 - s.floor, 1 + s.floor, color="grey", alpha=0.2,
                        linewidth=0)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(an.scenarios)), [s.name for s in an.scenarios], rotation=20)
    ax.set_ylabel(f"{an.metric.value} / baseline ({an.baseline}), 95% CI; grey: noise floor")
    ax.legend()
    path = out_dir / "ratio_vs_baseline.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    paths.append(path)
    return paths
