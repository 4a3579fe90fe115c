"""Issue 5 evidence: is the planned schedule as good as the per-cell oracle, measured?

On the reference engine (SmolLM2-135M, streaming drafter): profile the grid (resumable), plan a
2-D and a batch-only schedule and the best static K, then *measure* every cell (B, ctx), serving
shaped: `--requests-per-slot` x B requests of ctx tokens (or `--requests-per-cell` N at every B:
the same texts and sample size in every cell), at most B in flight (a request starts when one
finishes, like `vllm bench serve --max-concurrency`; B requests = one wave), each its own
document (`--texts`; a different set every repetition, prefilled untimed and kept in the prefix
cache), `--tokens` greedy tokens each with every static K of the grid, interleaved (K order
rotated per repetition), `--reps` times; goodput = decode tokens / decode wall (first token ->
end). The per-cell oracle is the measured best K. Each arm picks one
K per cell (checked: no context boundary is crossed while decoding), so its measured goodput at a
cell is that K's. Reported per cell: measured and predicted goodput per K (predicted: the cell's
workload simulated step by step, `plan_eval_predict.py`), each arm's K and its
measured / predicted speedup vs no-spec and fraction of the measured oracle; per context the
2-D / batch-only ratio (the shape of the upstream proposal's Table 1, C'/A'); and how far each
predictor is from the measurement, |predicted / measured - 1| per cell and K: steady batch with
interpolated or fitted step cost, and the cell's workload simulated (`plan_eval_predict.py`,
which also re-analyzes a finished run: `python benchmarks/plan_eval_predict.py DIR`).

    .venv/bin/python benchmarks/plan_eval.py --quick --out benchmarks/results/plan_eval/quick
    .venv/bin/python benchmarks/plan_eval.py --budget-min 30 --out benchmarks/results/plan_eval/full
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ARMS = ("no-spec", "best static K", "best batch-only", "2-D plan")


def parse_ints(text: str) -> tuple[int, ...]:
    return tuple(sorted({int(x) for x in text.split(",") if x.strip()}))


def measure_cell(llm: Any, prompts: list[list[int]], k: int, tokens: int, window: int,
                 concurrency: int) -> tuple[float, list[int], list[int]]:
    """Decode tokens/s of one greedy run with static K (0: no speculation) and at most
    `concurrency` requests in flight, and its drafted / accepted counts per draft position
    (what this cell's texts accepted: the planner predicts with the profile's texts)."""
    from specsched.engine import SamplingParams, SpeculativeConfig
    from specsched.engine.driver import drive
    from specsched.policy import PolicyConfig

    spec = None if k == 0 else SpeculativeConfig(window=window, policy=PolicyConfig.constant(k))
    llm.engine.set_speculative(spec)
    res = drive(llm.engine, prompts, SamplingParams(max_tokens=tokens, ignore_eos=True),
                concurrency)
    first = min(c[0] for c in res.chunk_times)
    decode = sum(len(s.output_token_ids) - 1 for s in res.seqs)
    counters = res.stats.spec
    return (decode / (res.end_s - first), list(counters.drafted_per_position),
            list(counters.accepted_per_position))


def cell_prompts(pieces: list[int], n: int, ctx: int, rep: int, texts: str) -> list[list[int]]:
    """The `n` prompts of `ctx` tokens a cell's repetition `rep` decodes: "shared" = the
    profile's text for every request and repetition (one shared prefix, distinct 16-token tails:
    a cell's verdict rides on one document); "per-request" = a different document for every
    request and repetition (what a server sees; prefilled once per repetition, untimed)."""
    from specsched.corpus import RequestShape, build_prompts, shared_prefix_prompts
    from specsched.tune.engine_profile import SUFFIX_TOKENS, TEXT_SEED

    if texts == "shared":
        return shared_prefix_prompts(pieces, n, ctx, SUFFIX_TOKENS, TEXT_SEED)
    return build_prompts([RequestShape(ctx, 1)] * n, pieces, seed=1000 + 97 * rep + ctx)


def conditional_rates(drafted: list[int], accepted: list[int]) -> list[float]:
    """Conditional acceptance per position (the profile's a_k) from pooled per-position counts.
    Every verify drafts all K positions, so accepted_k / drafted_k is the prefix rate r_k
    (P(the first k+1 drafts accepted)); a_k = r_k / r_(k-1). (Until 2026-12-03 this reported
    r_k under the name of a_k, which made the cells' texts look much harder than the profile's.)"""
    from specsched.planner.acceptance import conditional_from_prefix_rates

    prefix = [a / d for d, a in zip(drafted, accepted) if d]
    return [round(x, 3) for x in conditional_from_prefix_rates(prefix)]


def pool(counts: list[list[int]]) -> list[int]:
    out: list[int] = []
    for c in counts:
        out += [0] * (len(c) - len(out))
        for i, x in enumerate(c):
            out[i] += x
    return out


def arm_ks(plans: Any) -> dict[str, Any]:
    from specsched.planner import Arm

    a = plans.plan_2d.arms
    return {"no-spec": a[Arm.NO_SPEC].k_cells, "best static K": a[Arm.STATIC].k_cells,
            "best batch-only": a[Arm.BATCH_ONLY].k_cells, "2-D plan": a[Arm.PLAN].k_cells}


def check_no_crossing(plans: Any, b: int, c: int, tokens: int) -> None:
    for result in (plans.plan_2d, plans.batch_only):
        s = result.schedule
        assert s.k_for(b, c) == s.k_for(b, c + tokens), f"K changes within cell ({b}, {c})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--batch-sizes", default="1,4,16")
    ap.add_argument("--contexts", default="400,900,1900,4000")
    ap.add_argument("--ks", default="0,1,2,3,4")
    ap.add_argument("--model", default="smollm2-135m", help="a .gguf, HF folder or preset")
    ap.add_argument("--window", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5,
                    help="profile: timed steps per point and round")
    ap.add_argument("--rounds", type=int, default=3,
                    help="profile: rounds interleaving the Ks of each batch x context")
    ap.add_argument("--warmup", type=int, default=2, help="profile: untimed steps per point")
    ap.add_argument("--acceptance-prompts", type=int, default=16,
                    help="profile: requests per context for acceptance")
    ap.add_argument("--acceptance-tokens", type=int, default=128,
                    help="profile: tokens per acceptance request")
    ap.add_argument("--seeds", type=int, default=16, help="simulated draws per cell and K")
    ap.add_argument("--tokens", type=int, default=32, help="measurement: tokens per request")
    ap.add_argument("--reps", type=int, default=3, help="measurement: repetitions (at most)")
    ap.add_argument("--requests-per-slot", type=int, default=4,
                    help="measurement: a cell runs this many x B requests, at most B in flight "
                         "(1: one wave of B, the runs before 2026-12-03)")
    ap.add_argument("--requests-per-cell", type=int, default=None,
                    help="measurement: every cell runs this many requests (the same texts at "
                         "every B), at most B in flight; overrides --requests-per-slot")
    ap.add_argument("--budget-min", type=float, default=None,
                    help="fit the measurement repetitions into this total wall time")
    ap.add_argument("--texts", choices=("per-request", "shared"), default="per-request",
                    help="measurement: a document per request and repetition, or the "
                         "profile's one shared text (the runs before 2026-12-02)")
    ap.add_argument("--quick", action="store_true", help="B 1,4 x ctx 400,1900 x K 0..3")
    ap.add_argument("--out", type=Path, default=Path("plan_eval"))
    args = ap.parse_args()
    if args.quick:
        args.batch_sizes, args.contexts, args.ks = "1,4", "400,1900", "0,1,2,3"
        args.tokens, args.reps, args.repeats, args.requests_per_slot = 16, 1, 3, 1
        args.acceptance_prompts, args.acceptance_tokens = 4, 32
    t_start = time.perf_counter()
    from plan_eval_predict import (
        DIAGNOSES,
        band_cells,
        band_check,
        cell_requests,
        own_acceptance_cells,
        predict_cells,
        prediction_errors,
        print_band,
        print_errors,
    )

    from specsched.engine import SpeculativeConfig
    from specsched.engine.driver import warm_prefix
    from specsched.planner import CostModel, Extrapolation, ProfileGrid, run_profile
    from specsched.tune.engine_profile import EngineProfileConfig, EngineProfiler, build_llm
    from specsched.tune.pipeline import PlanSettings, plan_profile, write_tune_outputs
    from specsched.tune.profile_run import engine_metadata

    grid = ProfileGrid(parse_ints(args.batch_sizes), parse_ints(args.contexts), parse_ints(args.ks))
    cfg = EngineProfileConfig(model=args.model, speculative=SpeculativeConfig(window=args.window),
                              threads=args.threads, repeats=args.repeats, warmup=args.warmup,
                              rounds=args.rounds,
                              acceptance_tokens=args.acceptance_tokens,
                              acceptance_prompts=args.acceptance_prompts)
    if args.requests_per_slot < 1:
        ap.error("--requests-per-slot must be >= 1")
    rpc = args.requests_per_cell
    if rpc is not None and rpc < grid.batch_sizes[-1]:
        ap.error(f"--requests-per-cell must be >= the largest batch size ({grid.batch_sizes[-1]})")

    def n_requests(b: int) -> int:
        return cell_requests(b, args.requests_per_slot, rpc)

    per_rep_prompts = max(n_requests(b) for b in grid.batch_sizes)
    args.out.mkdir(parents=True, exist_ok=True)
    # a slot per prompt of a repetition: every arm finds every prompt prefix-cached
    profiler = EngineProfiler(cfg, grid, build_llm(cfg, grid, slots=per_rep_prompts))
    llm = profiler.llm
    load_start = os.getloadavg()
    print(f"profiling {grid.num_points} points (+{len(grid.contexts)} acceptance), "
          f"load {load_start[0]:.2f}", flush=True)

    def progress(done: int, total: int, point: Any) -> None:
        print(f"  [{done}/{total}] {point.kind.value} B={point.batch_size} ctx={point.ctx} "
              f"K={point.k}  {time.perf_counter() - t_start:.0f} s", flush=True)

    profile = run_profile(args.out / "profile.json", grid, engine_metadata(cfg), profiler,
                          progress=progress)
    t_profile = time.perf_counter() - t_start
    plans = plan_profile(profile, PlanSettings(), str(args.out / "profile.json"))
    write_tune_outputs(plans, args.out)
    model = CostModel.from_profile(profile)
    t = plans.plan_2d.table
    # predicted measurement time per repetition, from the profile itself (+10% overhead)
    per_rep = 1.1 * sum(n_requests(b) * args.tokens / model.goodput(b, c, k).value
                        for b in grid.batch_sizes for c in grid.contexts for k in grid.ks)
    reps = args.reps
    if args.budget_min is not None:
        left = args.budget_min * 60 - (time.perf_counter() - t_start) - 60 * len(grid.contexts)
        reps = max(1, min(args.reps, int(left // per_rep)))
    print(f"profile done in {t_profile:.0f} s; measuring {reps} rep(s), predicted "
          f"{per_rep * reps / 60:.1f} min", flush=True)
    pieces = profiler._pieces or llm.corpus_token_ids()  # a resumed profile did not load it
    measured: dict[tuple[int, int, int], list[float]] = {}
    drafted: dict[tuple[int, int], list[list[int]]] = {}  # (B, ctx) -> per run, K > 0
    accepted: dict[tuple[int, int], list[list[int]]] = {}
    for c in grid.contexts:
        for b in grid.batch_sizes:
            check_no_crossing(plans, b, c, args.tokens)
        for rep in range(reps):
            all_prompts = cell_prompts(pieces, per_rep_prompts, c, rep, args.texts)
            warm_prefix(llm.engine, all_prompts)
            order = list(grid.ks[rep % len(grid.ks):]) + list(grid.ks[:rep % len(grid.ks)])
            for b in grid.batch_sizes:
                for k in order:
                    v, d, a = measure_cell(llm, all_prompts[:n_requests(b)], k,
                                           args.tokens, args.window, b)
                    measured.setdefault((b, c, k), []).append(v)
                    if k == max(grid.ks) and k > 0:  # the deepest K tests every position
                        drafted.setdefault((b, c), []).append(d)
                        accepted.setdefault((b, c), []).append(a)
        for b in grid.batch_sizes:
            row = {k: statistics.median(measured[(b, c, k)]) for k in grid.ks}
            print(f"  B={b:>2} ctx={c:>4}: " + "  ".join(
                f"K{k} {row[k] / row[0]:.2f}" for k in grid.ks)
                + f"  (no-spec {row[0]:.1f} tok/s, load {os.getloadavg()[0]:.1f})", flush=True)
    ks_by_arm = arm_ks(plans)
    preds = predict_cells(profile, args.tokens, args.seeds, args.requests_per_slot, rpc)
    cells: list[dict[str, Any]] = []
    for i, b in enumerate(t.batch_sizes):
        for j, c in enumerate(t.contexts):
            med = {k: statistics.median(measured[(b, c, k)]) for k in grid.ks}
            model.goodput(b, c, 0, Extrapolation.ERROR)  # raises if a cell left the profile
            pred = {k: preds[f"{b},{c}"]["simulate"][str(k)] for k in grid.ks}
            oracle_k = max(med, key=lambda k: med[k])
            cell: dict[str, Any] = {
                "batch_size": b, "ctx": c,
                "measured_tok_s": {str(k): [round(x, 3) for x in measured[(b, c, k)]]
                                   for k in grid.ks},
                "measured_median_tok_s": {str(k): round(v, 3) for k, v in med.items()},
                "predicted_tok_s": {str(k): round(v, 3) for k, v in pred.items()},
                "measured_acceptance": conditional_rates(pool(drafted.get((b, c), [])),
                                                         pool(accepted.get((b, c), []))),
                "profile_acceptance": [round(x, 3) for x in profile_acceptance(profile, c)],
                "oracle_k_measured": oracle_k,
                "oracle_k_predicted": max(pred, key=lambda k: pred[k]),
                "arms": {},
            }
            for arm, kc in ks_by_arm.items():
                k = int(kc[i, j])
                cell["arms"][arm] = {
                    "k": k,
                    "measured_speedup": med[k] / med[0],
                    "predicted_speedup": pred[k] / pred[0],
                    "of_measured_oracle": med[k] / med[oracle_k],
                }
            cells.append(cell)
    summary = {}
    for arm in [*ARMS, "per-cell oracle (measured)"]:
        if arm in ARMS:
            sp = [cl["arms"][arm]["measured_speedup"] for cl in cells]
            of = [cl["arms"][arm]["of_measured_oracle"] for cl in cells]
        else:
            sp = [cl["measured_median_tok_s"][str(cl["oracle_k_measured"])]
                  / cl["measured_median_tok_s"]["0"] for cl in cells]
            of = [1.0] * len(cells)
        summary[arm] = {"geomean_measured_speedup": math.exp(statistics.fmean(map(math.log, sp))),
                        "min_of_oracle": min(of), "mean_of_oracle": statistics.fmean(of)}
    table1 = {}
    for c in t.contexts:
        rs = [cl["arms"]["2-D plan"]["measured_speedup"] / cl["arms"]["best batch-only"][
            "measured_speedup"] for cl in cells if cl["ctx"] == c]
        table1[str(c)] = math.exp(statistics.fmean(map(math.log, rs)))
    result = {
        "command": "python benchmarks/plan_eval.py " + " ".join(sys.argv[1:]),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": profile.metadata.device, "threads": args.threads,
        "load_avg_start": load_start, "load_avg_end": os.getloadavg(),
        "profile_s": round(t_profile, 1), "total_s": round(time.perf_counter() - t_start, 1),
        "reps": reps, "tokens": args.tokens, "texts": args.texts,
        "requests_per_slot": args.requests_per_slot, "requests_per_cell": rpc,
        "predictor": "simulate",
        "schedules": {"2-D plan": plans.plan_2d.schedule.entries(5),
                      "best batch-only": plans.batch_only.schedule.entries(3),
                      "best static K": plans.best_static_k},
        "cells": cells, "summary": summary, "ratio_2d_over_batch_only_by_ctx": table1,
    }
    for key, own in own_acceptance_cells(profile, cells, args.tokens,
                                         args.requests_per_slot, rpc).items():
        preds[key][DIAGNOSES[0]] = own
    errors = prediction_errors(cells, preds, grid.ks)
    result["prediction_errors"] = errors
    result["band"] = band_check(cells, band_cells(profile, args.tokens, args.seeds,
                                                  args.requests_per_slot, reps, rpc))
    (args.out / "plan_eval.json").write_text(json.dumps(result, indent=1))
    print_tables(result, grid.ks)
    print_errors(errors, grid.ks)
    print_band(result["band"])
    return 0


def profile_acceptance(profile: Any, ctx: int) -> list[float]:
    """The profile's conditional acceptance at the acceptance point nearest `ctx` (log scale)."""
    points = list(profile.acceptance)
    if not points:
        return []
    best = min(points, key=lambda p: abs(math.log(p.ctx) - math.log(ctx)))
    return list(best.a)


def _arm_cell(a: dict[str, Any]) -> str:
    return (f"{'K=' + str(a['k']):>5} {a['measured_speedup']:.2f}/{a['predicted_speedup']:.2f} "
            f"{100 * a['of_measured_oracle']:3.0f}%")


def print_tables(result: dict[str, Any], ks: tuple[int, ...]) -> None:
    print("\nper cell: measured speedup vs no-spec per K | arms' K (measured / predicted speedup)")
    print(f"{'B':>3} {'ctx':>5} " + " ".join(f"{'K' + str(k):>6}" for k in ks) + "  oracle  "
          + "  ".join(f"{a:>24}" for a in ARMS[1:]))
    for cl in result["cells"]:
        base = cl["measured_median_tok_s"]["0"]
        per_k = " ".join(f"{cl['measured_median_tok_s'][str(k)] / base:>6.2f}" for k in ks)
        arms = "  ".join(_arm_cell(cl["arms"][a]) for a in ARMS[1:])
        oracle = f"K={cl['oracle_k_measured']}"
        print(f"{cl['batch_size']:>3} {cl['ctx']:>5} {per_k}  {oracle:<6}  {arms}")
    print("\nacceptance per draft position (conditional): this cell's text at the deepest K vs the"
          " profile's texts")
    for cl in result["cells"]:
        print(f"{cl['batch_size']:>3} {cl['ctx']:>5}  measured {cl['measured_acceptance']}  "
              f"profile {cl['profile_acceptance']}")
    print("\narm: geomean measured speedup vs no-spec, mean / min fraction of measured oracle")
    for arm, s in result["summary"].items():
        print(f"  {arm:<28} x{s['geomean_measured_speedup']:.3f}  {100 * s['mean_of_oracle']:.1f}%"
              f" / {100 * s['min_of_oracle']:.1f}%")
    print("2-D / batch-only (measured, geomean over batch) by context: " + ", ".join(
        f"{c}: {r:.3f}" for c, r in result["ratio_2d_over_batch_only_by_ctx"].items()))


if __name__ == "__main__":
    raise SystemExit(main())
