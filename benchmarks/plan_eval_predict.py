"""How well the planner predicts plan_eval's measured cells (issue 15): per cell and K,
|predicted / measured - 1| of decode goodput and of the speedup vs no-spec, for three
predictors:

- `interpolate`: the old steady batch, T interpolated bilinearly in (B, log ctx);
- `fit`: steady batch with the step cost model fitted to the profile (`planner.cost_fit`);
- `simulate`: the measured cell as a workload (N requests of ctx tokens, N = R x B or the
  same N at every B, at most B in flight, a finished one replaced at once; N = B: one wave;
  `tokens` output each, prefix-cached prompts) simulated step by step (`planner.predict`):
  the batch shrinks as the last requests finish, requests draw their own acceptance (and its
  course along the output).
  What plan_eval reports as an arm's prediction.

Acceptance is the profile's mean (quantile 0.5) in all three: a prediction, not a bet. A fourth
line is a diagnosis, not a prediction: `own-acceptance` simulates each cell with the acceptance
its own texts measured (pooled over its requests at the deepest K), so what remains is the step
cost and the workload's shape; the gap between it and `simulate` is the part of the error that
comes from the cell's texts accepting differently from the profile's.

    .venv/bin/python benchmarks/plan_eval_predict.py DIR   # re-analyze DIR/plan_eval.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

PREDICTORS = ("interpolate", "fit", "simulate")
DIAGNOSES = ("own-acceptance",)
PREFIX_CACHED_TOKENS = 16  # plan_eval's prompts share all but a 16-token suffix


def cell_requests(b: int, requests_per_slot: int = 1, requests_per_cell: int | None = None
                  ) -> int:
    """How many requests a plan_eval cell of batch size `b` runs per repetition: N
    (`requests_per_cell`: the same texts at every B) or R x B (`requests_per_slot`)."""
    return requests_per_slot * b if requests_per_cell is None else requests_per_cell


def cell_workload(b: int, c: int, tokens: int, requests_per_slot: int,
                  spread: float | None = None, requests_per_cell: int | None = None) -> Any:
    """The workload a plan_eval cell runs: `cell_requests` requests of c tokens, at most B in
    flight (B of them: one wave), `tokens` output each, prefix-cached prompts."""
    from specsched.planner.workload import Arrival, DistKind, LengthDist, WorkloadSpec

    n = cell_requests(b, requests_per_slot, requests_per_cell)
    arrival = Arrival.WAVES if n <= b else Arrival.CLOSED_LOOP
    return WorkloadSpec(n, b, LengthDist(DistKind.FIXED, (c,)),
                        LengthDist(DistKind.FIXED, (tokens,)), arrival, spread,
                        PREFIX_CACHED_TOKENS)


def simulate_cell(profile: Any, b: int, c: int, tokens: int, seeds: int,
                  requests_per_slot: int, quantile: float = 0.5,
                  sample: int | None = None, requests_per_cell: int | None = None
                  ) -> dict[str, float]:
    """{K: decode tok/s} of cell (b, c) simulated with static K (`simulate`), the profile's
    acceptance at `quantile` of its mean's sampling distribution over `tokens` output tokens
    (0.5: the mean), or of the rate a `sample` of that many new texts pools."""
    from specsched.planner.predict import predict_arms
    from specsched.policy import PolicyConfig

    arms = {str(k): PolicyConfig.constant(k) for k in profile.grid.ks}
    work = cell_workload(b, c, tokens, requests_per_slot, requests_per_cell=requests_per_cell)
    preds = predict_arms(profile, work, arms,
                         range(seeds), acceptance_quantile=quantile, acceptance_sample=sample)
    return {k: p.decode_goodput.mean for k, p in preds.items()}


def predict_cells(profile: Any, tokens: int, seeds: int = 16, requests_per_slot: int = 1,
                  requests_per_cell: int | None = None) -> dict[str, dict[str, Any]]:
    """'B,ctx' -> {predictor: {K: predicted decode tok/s}} on the profile's grid."""
    from specsched.planner import CostKind, CostModel

    g = profile.grid
    steady = {kind: CostModel.from_profile(profile, CostKind(kind)) for kind in PREDICTORS[:2]}
    out: dict[str, dict[str, Any]] = {}
    for b in g.batch_sizes:
        for c in g.contexts:
            cell: dict[str, Any] = {
                kind: {str(k): m.goodput(b, c, k).value for k in g.ks}
                for kind, m in steady.items()
            }
            cell["simulate"] = simulate_cell(profile, b, c, tokens, seeds, requests_per_slot,
                                             requests_per_cell=requests_per_cell)
            out[f"{b},{c}"] = cell
    return out


BAND = (0.025, 0.975)  # the ends of a 95 % interval


def band_cells(profile: Any, tokens: int, seeds: int = 16, requests_per_slot: int = 1,
               reps: int = 1, requests_per_cell: int | None = None
               ) -> dict[str, dict[float, dict[str, float]]]:
    """'B,ctx' -> {quantile: {K: decode tok/s}}: `simulate` with the acceptance at the ends of
    the 95 % interval (`BAND`) of the rate the cell's own texts (reps x `cell_requests`) will pool
    over `tokens` output tokens: the profile's sampling and the cell's
    (`acceptance_ci.acceptance_bound` with a sample), where a measurement should fall."""
    g = profile.grid
    def band(b: int, c: int, q: float) -> dict[str, float]:
        n = reps * cell_requests(b, requests_per_slot, requests_per_cell)
        return simulate_cell(profile, b, c, tokens, seeds, requests_per_slot, q, n,
                             requests_per_cell)

    return {f"{b},{c}": {q: band(b, c, q) for q in BAND}
            for b in g.batch_sizes for c in g.contexts}


def band_check(cells: list[dict[str, Any]], bands: dict[str, dict[float, dict[str, float]]]
               ) -> dict[str, Any]:
    """Per cell and K > 0: the predicted speedup band [lo, hi] (`band_cells`), the measured
    speedup (median over replicates) and its replicates' range; whether the measured speedup
    lies inside the band, and whether the band overlaps the replicates' range (the
    measurement's own text sample: each replicate decodes its own texts)."""
    rows, inside, overlap = [], 0, 0
    for cl in cells:
        m, med = cl["measured_tok_s"], cl["measured_median_tok_s"]
        qs = bands[f"{cl['batch_size']},{cl['ctx']}"]
        for k in [k for k in med if k != "0"]:
            lo, hi = sorted(qs[q][k] / qs[q]["0"] for q in BAND)
            meas = med[k] / med["0"]
            reps = [x / y for x, y in zip(m[k], m["0"], strict=True)]  # [reps]
            hit, over = lo <= meas <= hi, lo <= max(reps) and min(reps) <= hi
            inside += hit
            overlap += over
            rows.append({"batch_size": cl["batch_size"], "ctx": cl["ctx"], "k": int(k),
                         "band": [round(lo, 4), round(hi, 4)], "measured": round(meas, 4),
                         "replicates": [round(x, 4) for x in reps], "inside": hit,
                         "overlaps_replicates": over})
    return {"rows": rows, "inside": inside, "overlaps_replicates": overlap, "total": len(rows)}


def print_band(band: dict[str, Any]) -> None:
    print("\nthe prediction's band (acceptance at the ends of the 95 % interval of what the "
          "cell's texts pool over its output) vs measured speedup and its replicates' range "
          "(* = band misses the range)")
    cells: dict[tuple[int, int], list[str]] = {}
    for r in band["rows"]:
        lo, hi = r["band"]
        cells.setdefault((r["batch_size"], r["ctx"]), []).append(
            f"K{r['k']} [{lo:.2f},{hi:.2f}] {r['measured']:.2f}"
            f"{'' if r['overlaps_replicates'] else '*'}")
    for (b, c), parts in cells.items():
        print(f"  B={b:>2} ctx={c:>5}  " + "  ".join(parts))
    print(f"measured inside the band: {band['inside']} of {band['total']}; band overlapping the "
          f"replicates' range: {band['overlaps_replicates']} of {band['total']}")


def own_acceptance_cells(profile: Any, cells: list[dict[str, Any]], tokens: int,
                         requests_per_slot: int = 1, requests_per_cell: int | None = None
                         ) -> dict[str, dict[str, float]]:
    """'B,ctx' -> {K: decode tok/s} simulated with the cell's own measured acceptance (its
    pooled conditional rates; no per-request draws: pooled counts already weigh each request by
    its verifies). Cells without a measured acceptance are left out."""
    import dataclasses

    from specsched.planner.predict import predict_arms
    from specsched.planner.profile import AcceptancePoint
    from specsched.policy import PolicyConfig

    arms = {str(k): PolicyConfig.constant(k) for k in profile.grid.ks}
    out: dict[str, dict[str, float]] = {}
    for cl in cells:
        a = [min(max(float(x), 0.0), 1.0) for x in cl.get("measured_acceptance") or []]
        if not a:
            continue
        b, c = cl["batch_size"], cl["ctx"]
        own = dataclasses.replace(profile, acceptance=(AcceptancePoint(c, tuple(a), n=1),))
        work = cell_workload(b, c, tokens, requests_per_slot, 0.0, requests_per_cell)
        preds = predict_arms(own, work, arms,
                             range(1))
        out[f"{b},{c}"] = {k: p.decode_goodput.mean for k, p in preds.items()}
    return out


def prediction_errors(cells: list[dict[str, Any]], preds: dict[str, dict[str, Any]],
                      ks: tuple[int, ...]) -> dict[str, Any]:
    """Per cell |pred/meas - 1| of goodput (every K) and speedup (K > 0); summary per
    predictor: mean and max over cells x K."""
    rows = []
    for cl in cells:
        meas = cl["measured_median_tok_s"]
        pc = preds[f"{cl['batch_size']},{cl['ctx']}"]
        row: dict[str, Any] = {"batch_size": cl["batch_size"], "ctx": cl["ctx"]}
        for name in [n for n in (*PREDICTORS, *DIAGNOSES) if n in pc]:
            p = pc[name]
            row[name] = {
                "predicted_tok_s": {k: round(v, 3) for k, v in p.items()},
                "goodput_abs_err": {str(k): abs(p[str(k)] / meas[str(k)] - 1) for k in ks},
                "speedup_abs_err": {
                    str(k): abs((p[str(k)] / p["0"]) / (meas[str(k)] / meas["0"]) - 1)
                    for k in ks if k > 0},
            }
        rows.append(row)
    summary = {}
    for name in [n for n in (*PREDICTORS, *DIAGNOSES) if all(n in r for r in rows)]:
        g = [e for r in rows for e in r[name]["goodput_abs_err"].values()]
        s = [e for r in rows for e in r[name]["speedup_abs_err"].values()]
        summary[name] = {"goodput_mean_abs_err": statistics.fmean(g), "goodput_max_abs_err": max(g),
                         "speedup_mean_abs_err": statistics.fmean(s) if s else 0.0,
                         "speedup_max_abs_err": max(s) if s else 0.0}
    return {"cells": rows, "summary": summary}


def print_errors(errors: dict[str, Any], ks: tuple[int, ...]) -> None:
    names = list(errors["summary"])
    print("\nprediction error |predicted/measured - 1| of the speedup vs no-spec, per K > 0 "
          f"({' | '.join(names)})")
    for r in errors["cells"]:
        parts = [" ".join(f"{r[n]['speedup_abs_err'][str(k)]:.2f}" for n in names)
                 for k in ks if k > 0]
        print(f"  B={r['batch_size']:>2} ctx={r['ctx']:>5}  " + "  ".join(
            f"K{k}: {p}" for k, p in zip([k for k in ks if k > 0], parts, strict=True)))
    print("mean / max over cells x K:")
    for name, s in errors["summary"].items():
        print(f"  {name:<14} speedup {s['speedup_mean_abs_err']:.3f} / "
              f"{s['speedup_max_abs_err']:.3f}   goodput {s['goodput_mean_abs_err']:.3f} / "
              f"{s['goodput_max_abs_err']:.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("dir", type=Path, help="a plan_eval output folder (profile.json, "
                    "plan_eval.json)")
    ap.add_argument("--seeds", type=int, default=16)
    args = ap.parse_args()
    from specsched.planner import load_profile

    profile = load_profile(args.dir / "profile.json")
    result = json.loads((args.dir / "plan_eval.json").read_text())
    rps, rpc = result.get("requests_per_slot", 1), result.get("requests_per_cell")
    preds = predict_cells(profile, result["tokens"], args.seeds, rps, rpc)
    for key, own in own_acceptance_cells(profile, result["cells"], result["tokens"], rps,
                                         rpc).items():
        preds[key][DIAGNOSES[0]] = own
    errors = prediction_errors(result["cells"], preds, profile.grid.ks)
    band = band_check(result["cells"], band_cells(profile, result["tokens"], args.seeds, rps,
                                                    result["reps"], rpc))
    out = args.dir / "prediction_errors.json"
    out.write_text(json.dumps({"command": "python benchmarks/plan_eval_predict.py "
                               + " ".join(sys.argv[1:]), **errors, "band": band}, indent=1))
    print_errors(errors, profile.grid.ks)
    print_band(band)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
