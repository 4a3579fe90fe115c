"""What `specsched plan` and `specsched tune` share about prediction: the cost-model and
acceptance-bound options, the fit report (loud when the fit is poor), and the workload
prediction per arm (`planner.predict`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from specsched.cli._common import stdout_console
from specsched.errors import UserError

if TYPE_CHECKING:
    from specsched.planner import CostModel, PlanResult, Profile
    from specsched.planner.predict import WorkloadPrediction
    from specsched.planner.workload import WorkloadSpec
    from specsched.schedule import Schedule

DEFAULT_QUANTILE = 0.1


def add_predict_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cost-model", choices=["auto", "fit", "interpolate"], default="auto",
                   help="step time from the linear step cost model fitted to the whole profile "
                   "(fit; residuals reported), bilinear between profiled points (interpolate), "
                   "or auto (default): the fit unless its RMS residual is above 10%%")
    p.add_argument("--acceptance-quantile", type=float, default=DEFAULT_QUANTILE,
                   help="plan on this quantile of the measured mean acceptance (default "
                   f"{DEFAULT_QUANTILE}: a 90%% lower confidence bound, so an uncertain gain is "
                   "not bet on; 0.5: the mean)")
    p.add_argument("--workload", default=None, metavar="W",
                   help="predict each arm's goodput on this workload by simulating it step by "
                   "step (a YAML/JSON file or inline JSON: num_requests, concurrency, arrival "
                   "closed-loop|waves, prompt_len, output_len, ...; see notes/planner.md)")
    p.add_argument("--seeds", type=int, default=16,
                   help="workload draws to simulate per arm (default 16)")


def check_predict_args(args: argparse.Namespace) -> None:
    if not 0.0 < args.acceptance_quantile < 1.0:
        raise UserError(f"--acceptance-quantile must be in (0, 1), got {args.acceptance_quantile}")
    if not 1 <= args.seeds <= 1000:
        raise UserError(f"--seeds must be in [1, 1000], got {args.seeds}")


def load_workload_arg(args: argparse.Namespace) -> WorkloadSpec | None:
    from specsched.planner.workload import load_workload

    check_predict_args(args)
    return None if args.workload is None else load_workload(args.workload)


def render_model(model: CostModel) -> None:
    """The fit's residual summary (a loud warning when poor) and the acceptance planned on."""
    console = stdout_console()
    fit = model.fit
    if fit is not None:
        used = ("in use" if model.kind.value == "fit"
                else "not used: planning interpolates between profiled points")
        console.print(f"{fit.summary()}; {used}")
        warning = fit.warning()
        if warning:
            console.print(f"[bold red]WARNING: {warning}[/]")
    if model.acceptance_quantile == 0.5 or not model.acc.size:
        return
    from specsched.planner import expected_tokens

    k = model.acc.shape[1]
    pairs = [(p.ctx, expected_tokens(row, k), expected_tokens(p.a[:k], k))
             for p, row in zip(model.profile.acceptance, model.acc, strict=False)]
    if any(abs(bound - mean) > 1e-9 for _, bound, mean in pairs):
        console.print(f"acceptance planned at quantile {model.acceptance_quantile:g} of its "
                      f"mean: E(tokens/step) at K={k}: " + ", ".join(
                          f"ctx {c}: {bound:.2f} (mean {mean:.2f})" for c, bound, mean in pairs))


def predict_plan_arms(profile: Profile, plan: PlanResult, batch_only: Schedule | None,
                      spec: WorkloadSpec, seeds: int) -> dict[str, WorkloadPrediction]:
    from specsched.planner.predict import plan_arms, predict_arms

    return predict_arms(profile, spec, plan_arms(profile, plan, batch_only), range(seeds))


def predictions_to_obj(preds: dict[str, WorkloadPrediction], source: str,
                       seeds: int) -> dict[str, Any]:
    return {"workload": source, "seeds": seeds,
            "arms": {name: p.to_obj() for name, p in preds.items()}}


def render_predictions(preds: dict[str, WorkloadPrediction], source: str) -> None:
    from rich.table import Table

    console = stdout_console()
    from rich.markup import escape

    shown = "(inline)" if source.lstrip().startswith("{") else escape(source)
    table = Table(title=f"predicted on workload {shown}, simulated step by step: mean "
                        f"[95% CI over draws]")
    for col in ("arm", "decode tok/s", "speedup", "steps", "K: steps"):
        table.add_column(col, justify="left" if col == "arm" else "right")
    for name, p in preds.items():
        d, s = p.decode_goodput, p.decode_speedup
        ks = " ".join(f"{k}:{n}" for k, n in sorted(p.k_histogram.items()))
        table.add_row(escape(name), f"{d.mean:.1f}", f"x{s.mean:.3f} [{s.lo:.2f}, {s.hi:.2f}]",
                      f"{p.mean_steps:.0f}", ks)
    console.print(table)
    first = next(iter(preds.values()), None)
    if first is not None and first.cost_rel_rmse > 0.10:
        console.print(f"[bold red]WARNING: the step cost model behind these predictions misses "
                      f"the profile by {100 * first.cost_rel_rmse:.1f}% RMS[/]")
    outside = {p.extrapolation for p in preds.values() if p.extrapolation}
    for reason in sorted(outside):
        console.print(f"[yellow]extrapolated beyond the profile: {escape(reason)}[/]")
