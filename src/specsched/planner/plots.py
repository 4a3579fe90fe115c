"""PNG figures of a plan: K over (batch, context) and the predicted speedup surface.

matplotlib is imported inside the functions (Agg backend), so `specsched.planner` stays light.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from specsched.planner.plan import Arm, PlanResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _axes(result: PlanResult, values: np.ndarray, title: str, cmap: str, fmt: str) -> Figure:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = result.table
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * len(t.contexts), 1.2 + 0.6 * len(t.batch_sizes)))
    im = ax.imshow(values, origin="lower", aspect="auto", cmap=cmap)
    ax.set_xticks(range(len(t.contexts)), [str(c) for c in t.contexts])
    ax.set_yticks(range(len(t.batch_sizes)), [str(b) for b in t.batch_sizes])
    ax.set_xlabel("context (tokens)")
    ax.set_ylabel("batch size")
    ax.set_title(title)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            ax.text(
                j,
                i,
                format(values[i, j], fmt),
                ha="center",
                va="center",
                fontsize=8,
                bbox={"facecolor": "white", "alpha": 0.7, "edgecolor": "none", "pad": 1},
            )
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    return fig


def save_k_heatmap(result: PlanResult, path: str | Path) -> Path:
    """Heatmap of the planned K per (batch, context) cell."""
    import matplotlib.pyplot as plt

    k = result.arms[Arm.PLAN].k_cells.astype(float)
    fig = _axes(result, k, "planned K", "viridis", ".0f")
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def save_speedup_surface(result: PlanResult, path: str | Path) -> Path:
    """Heatmap of the plan's predicted goodput / no-spec goodput per cell."""
    import matplotlib.pyplot as plt

    s = result.arms[Arm.PLAN].speedup
    fig = _axes(result, s, "predicted speedup vs no-spec", "RdYlGn", ".2f")
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
