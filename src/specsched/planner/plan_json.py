"""A plan as JSON: the schedule under vLLM's key names plus the predictions behind it.

The same object `specsched plan --out` writes (`load_schedule` / `specsched check` read it as is);
here so that library callers (`specsched tune`, `specsched demo`) need not import the CLI.
"""

from __future__ import annotations

from typing import Any

from specsched.planner.interpolate import CostModel
from specsched.planner.plan import Arm, ArmResult, PlanResult


def static_k(arm: ArmResult) -> int:
    """The one K of a 1 x 1 arm (best static K, no-spec)."""
    return int(arm.k_cells.flat[0])


def model_to_obj(model: CostModel) -> dict[str, Any]:
    """How the plan's goodput was predicted: the step cost model in use with the fit's residuals
    per profiled point, and the acceptance planned on (mean, confidence interval, the bound)."""
    fit = {} if model.fit is None else model.fit.to_obj()
    acc = [
        {"ctx": p.ctx, "mean": list(p.a), "planned": [round(float(x), 6) for x in row],
         "num_requests": p.num_requests, "n": p.n,
         "ci_level": p.ci_level if p.ci_lo is not None else None,
         "ci_lo": None if p.ci_lo is None else list(p.ci_lo),
         "ci_hi": None if p.ci_hi is None else list(p.ci_hi)}
        for p, row in zip(model.profile.acceptance, model.acc, strict=False)
    ]
    return {"cost_model": {"kind": model.kind.value, **fit},
            "acceptance": {"quantile": model.acceptance_quantile, "per_ctx": acc}}


def plan_to_obj(result: PlanResult, source: str) -> dict[str, Any]:
    """`num_speculative_tokens_per_batch_size` (3-item) or `speculative_token_schedule` (5-item),
    `num_speculative_tokens` and `specsched_plan` (cells, predicted speedups, the arms, and how
    they were predicted: `cost_model`, `acceptance`)."""
    sched = result.schedule
    key = (
        "num_speculative_tokens_per_batch_size"
        if sched.is_batch_only
        else "speculative_token_schedule"
    )
    t = result.table
    plan = result.arms[Arm.PLAN]
    return {
        key: sched.entries(3 if sched.is_batch_only else 5),
        "num_speculative_tokens": sched.max_emitted_k,
        "specsched_plan": {
            "source": source,
            "batch_sizes": list(t.batch_sizes),
            "contexts": list(t.contexts),
            "ks": list(t.ks),
            "k_cells": plan.k_cells.tolist(),
            "predicted_speedup_cells": [
                [round(x, 4) for x in row] for row in plan.speedup.tolist()
            ],
            "extrapolated_cells": t.extrapolated.tolist(),
            "min_gain": result.config.min_gain,
            "floor": result.config.floor,
            "arms": {
                a.value: {
                    "ranges": list(r.shape),
                    "k_cells": r.k_cells.tolist(),
                    "geomean_speedup_vs_nospec": round(r.geomean_speedup, 4),
                    "min_speedup": round(float(r.speedup.min()), 4),
                    "max_speedup": round(float(r.speedup.max()), 4),
                    "mean_fraction_of_oracle": round(r.mean_of_oracle, 4),
                }
                for a, r in result.arms.items()
            },
            **({} if t.model is None else model_to_obj(t.model)),
        },
    }
