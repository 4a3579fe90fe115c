"""Trace-driven B = 1 simulator on the adaptive grid's own texts (forty-first stop, issue 14).

Greedy drafts are deterministic, so whether the draft's token at output index g matches the
target's (given the true prefix) is a property of the text: c[g]. Every static arm of a grid run
reveals it at the indexes its steps tested (a step at g drafting K that accepted a: c = 1 on
g..g+a-1, c = 0 at g+a when a < K); the union over the static arms covers 97 % of the indexes
of the grid's 14 B = 1 requests per cell (unseen ones, bonus indexes after full accepts, are
filled from the index before), and where two arms saw one index they agree 98 % of the time (the
draft's own int8 KV within a step vs the target's at a step start). Every run of
grid-one-run-*.yaml used the same texts, so one set of traces serves all runs. A policy is then
played on the traces exactly (accepted = the run of 1s from g, capped at K and the room), each
step costing the run's own median step at that K (per cell and replicate, static arms), so the
static arms reproduce their measurements and any AdaptiveConfig is scored without machine noise.

  .venv/bin/python notes/scripts/trace_sim.py                        # defaults, pooled over runs
  .venv/bin/python notes/scripts/trace_sim.py 'margin=0.0' 'start_k=4,min_gain=0.0'  (configs)
  .venv/bin/python notes/scripts/trace_sim.py --check RUN_DIR   # sim vs engine K sequences
  .venv/bin/python notes/scripts/trace_sim.py --per-text RUN_DIR   # each text, simulated
  .venv/bin/python notes/scripts/trace_sim.py --measured   # the runs' measurements, pooled
  .venv/bin/python notes/scripts/trace_sim.py --steps   # adaptive steps vs static at the same K
  .venv/bin/python notes/scripts/trace_sim.py --min-spec 8   # the guard's MIN_SPEC patched
  .venv/bin/python notes/scripts/trace_sim.py --slow 0.2:2.7:1.35   # a slow spell (seconds) in every arm
"""
import argparse
import ast
import collections
import glob
import json
import math
import random
import time
from pathlib import Path

import numpy as np

from specsched.planner import load_profile
from specsched.planner.adaptive_prior import adaptive_prior
from specsched.policy import AdaptiveConfig, BatchState, PolicyConfig, RequestOutcome, StepOutcome
from specsched.policy import adaptive_guard as guard
from specsched.policy.config import PolicyKind
from specsched.schedule import Schedule

OUT_LEN, PREFILL = 32, 16
PROMPT = {"B1-ctx512": 512, "B1-ctx4096": 4096}
RUNS = sorted(glob.glob("benchmarks/results/adaptive/grid-one-run-*/"))


def load_run(path: Path):
    """({(scenario, replicate, request): {g: {arm: c}}}, {(scenario, replicate, arm): steps})."""
    obs = collections.defaultdict(lambda: collections.defaultdict(dict))
    steps_of = {}
    for line in (path / "grid.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("type") != "trial" or r.get("failed") or r.get("warmup"):
            continue
        if r["scenario"] not in PROMPT:
            continue
        steps = r["extra"]["steps"]  # [ms, prefill tokens, K per request, accepted per request]
        steps_of[(r["scenario"], r["replicate"], r["arm"])] = steps
        if not r["arm"].startswith("static"):
            continue
        i, g = -1, 0
        for _ms, pre, ks, acc, *_ in steps:
            if pre:
                i, g = i + 1, 1  # the prefill step samples the first token
                continue
            k, a = ks[0], acc[0]
            pos = obs[(r["scenario"], r["replicate"], i)]
            for j in range(a):
                pos[g + j][r["arm"]] = 1
            if a < k:
                pos[g + a][r["arm"]] = 0
            g += min(a + 1, OUT_LEN - g)
    return obs, steps_of


def traces(obs) -> dict:
    out = {}
    for key, pos in obs.items():
        c: list[int] = []
        for g in range(OUT_LEN + 8):
            v = list(pos.get(g, {}).values())
            c.append((1 if 2 * sum(v) >= len(v) else 0) if v else (c[-1] if c else 1))
        out[key] = c
    return out


def reps_of(steps_of, tr, scen) -> list[int]:
    """The replicates of a cell that ran no-spec and whose two texts are traced (7 in the early
    grids; 21 at B = 1 since grid 43, the same texts by seed)."""
    return sorted({r for (s, r, arm) in steps_of if s == scen and arm == "no-spec"
                   and (s, r, 0) in tr and (s, r, 1) in tr})


def costs(steps_of, scen, rep):
    """Median ms per K of this cell and replicate's static and no-spec steps, and of a prefill."""
    per_k, pre = collections.defaultdict(list), []
    for (s, r, arm), steps in steps_of.items():
        if s == scen and r == rep and arm != "adaptive":
            for ms, p, ks, _, *_ in steps:
                if p:
                    pre.append(ms)
                elif ks:
                    per_k[ks[0]].append(ms)
    return {k: float(np.median(v)) for k, v in per_k.items()}, float(np.median(pre))


def play(policy, tr, scen, rep, ms_k, ms_pre, rng, noise=0.05, ks=None, slow=None) -> float:
    """Seconds for the cell's trial (2 requests one after the other) under `policy`; slow:
    (lo, hi, factor), a step starting at lo..hi seconds into the trial `factor` times slower, a
    slow spell of the machine such as grid 44's B1-ctx4096 replicate 16 (adaptive's K = 2-4
    steps 1.33-1.45x the replicate's medians for ~2.4 s, its wall 1.38x static K4's)."""
    total, P = 0.0, PROMPT[scen]

    def spell() -> float:
        return slow[2] if slow and slow[0] <= total < slow[1] else 1.0
    for i in range(2):
        c, rid = tr[(scen, rep, i)], rep * 2 + i
        d = policy.decide(BatchState(num_computed_tokens=(0,), num_prompt_tokens=(P,),
                                     room=(OUT_LEN - 1,), request_ids=(rid,)))
        t = ms_pre * math.exp(rng.gauss(0, noise)) / 1000 * spell()
        total += t
        policy.observe(StepOutcome(1, (), t, d.step_k, PREFILL, (P - 1,)))
        g = 1
        while g < OUT_LEN:
            d = policy.decide(BatchState(num_computed_tokens=(P + g,), num_prompt_tokens=(P,),
                                         room=(OUT_LEN - g - 1,), request_ids=(rid,)))
            k = min(d.num_spec_tokens[0], OUT_LEN - g - 1)
            a = 0
            while a < k and c[g + a]:
                a += 1
            t = (ms_k[k if k in ms_k else max(ms_k)] * math.exp(rng.gauss(0, noise)) / 1000
                 * spell())
            total += t
            if ks is not None:
                ks.append(k)
            policy.observe(StepOutcome(1, (RequestOutcome(rid, P + g, k, a),), t, k, 0, ()))
            g += min(a + 1, OUT_LEN - g)
    return total


def adaptive(run: Path, over: dict) -> PolicyConfig:
    prior = adaptive_prior(load_profile(next(run.glob("profile*.json"))), AdaptiveConfig(**over),
                           max_k=5)
    return PolicyConfig(schedule=Schedule.constant(1), kind=PolicyKind.ADAPTIVE, adaptive=prior,
                        per_request_k=True)


def evaluate(runs, tr, over: dict, seeds=range(3), slow=None) -> dict:
    """Per cell: geometric means over runs x replicates of no-spec time / arm time."""
    out = {}
    for scen in PROMPT:
        logs = collections.defaultdict(list)
        for run, steps_of in runs:
            pc = adaptive(run, over)
            for rep in reps_of(steps_of, tr, scen):
                ms_k, ms_pre = costs(steps_of, scen, rep)
                t = {f"K{k}": np.mean([play(PolicyConfig.constant(k).build(), tr, scen, rep, ms_k,
                                            ms_pre, random.Random(s), slow=slow) for s in seeds])
                     for k in range(6)}
                t["adaptive"] = np.mean([play(pc.build(), tr, scen, rep, ms_k, ms_pre,
                                              random.Random(s), slow=slow) for s in seeds])
                for a, v in t.items():
                    logs[a].append(math.log(t["K0"] / v))
        out[scen] = {a: math.exp(float(np.mean(v))) for a, v in logs.items()}
    return out


class _Timed:
    """A policy whose decide + observe time is summed (the policy's own compute per step)."""

    def __init__(self, policy) -> None:
        self.p, self.seconds, self.calls = policy, 0.0, 0

    max_k = property(lambda self: self.p.max_k)

    def decide(self, batch):
        t0 = time.perf_counter()
        out = self.p.decide(batch)
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        return out

    def observe(self, outcome) -> None:
        t0 = time.perf_counter()
        self.p.observe(outcome)
        self.seconds += time.perf_counter() - t0


def check(run: Path, tr) -> None:
    """The simulated adaptive arm's K per step beside the engine's (same texts and costs), and
    the policy's own decide + observe time per step."""
    _, steps_of = load_run(run)
    spent = calls = 0.0
    for scen in PROMPT:
        for rep in reps_of(steps_of, tr, scen):
            ms_k, ms_pre = costs(steps_of, scen, rep)
            policy, ks = _Timed(adaptive(run, {}).build()), []
            play(policy, tr, scen, rep, ms_k, ms_pre, random.Random(0), noise=0.0, ks=ks)
            spent, calls = spent + policy.seconds, calls + policy.calls
            real = [s[2][0] for s in steps_of[(scen, rep, "adaptive")] if not s[1] and s[2]]
            same = sum(a == b for a, b in zip(ks, real))
            print(f"{scen} rep {rep}: sim {''.join(map(str, ks))}\n{'':17s} eng "
                  f"{''.join(map(str, real))}  ({same} of {min(len(ks), len(real))} alike)")
    print(f"policy decide + observe: {1000 * spent / calls:.2f} ms a step")


def measured(runs) -> None:
    """The runs' own measurements pooled: each arm's geometric-mean speedup over no-spec (paired
    by run and replicate) and adaptive / the pooled best static K with a 95 % t-interval."""
    from scipy import stats
    for scen in PROMPT:
        logs = collections.defaultdict(list)
        for run, _ in runs:
            tok_s = {}
            for line in (run / "grid.jsonl").read_text().splitlines():
                r = json.loads(line)
                if (r.get("type") == "trial" and r["scenario"] == scen and not r.get("failed")
                        and not r.get("warmup")):
                    tok_s[(r["arm"], r["replicate"])] = r["metrics"]["output_tok_s"]
            for (arm, rep), v in tok_s.items():
                if arm != "no-spec":
                    logs[arm].append(math.log(v / tok_s[("no-spec", rep)]))
        gm = {a: math.exp(float(np.mean(v))) for a, v in sorted(logs.items())}
        best = max((a for a in gm if a.startswith("static")), key=gm.get)
        d = np.asarray(logs["adaptive"]) - np.asarray(logs[best])
        h = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
        print(f"{scen}: " + " ".join(f"{a} {v:.3f}" for a, v in gm.items())
              + f" -> adaptive / {best} {math.exp(d.mean()):.3f} [{math.exp(d.mean() - h):.3f},"
              f" {math.exp(d.mean() + h):.3f}] (n={len(d)})")


def step_costs(runs) -> None:
    """The engine's adaptive steps over the static arms' median step at the same K (same cell and
    replicate): after a step at the same K, after a K switch, a request's first decode step; and
    per run and cell the trial's step time over what its K sequence would cost at those medians."""
    groups = collections.defaultdict(list)
    for run, steps_of in runs:
        per_cell = []
        for scen in PROMPT:
            trials = []
            for rep in range(7):
                ms_k, ms_pre = costs(steps_of, scen, rep)
                prev, real, expect = None, 0.0, 0.0
                for ms, pre, ks, _, *_ in steps_of[(scen, rep, "adaptive")]:
                    k = None if pre else ks[0]
                    if k is not None and k in ms_k:
                        key = "first" if prev == "pre" else "same" if prev == k else "switched"
                        groups[key].append(ms / ms_k[k])
                    real += ms
                    expect += ms_pre if pre else ms_k.get(k, ms)
                    prev = "pre" if pre else k
                trials.append(real / expect)
            per_cell.append(f"{scen} " + " ".join(f"{x:.3f}" for x in trials))
        print(f"{run.name}: " + " | ".join(per_cell))
    for key, v in groups.items():
        print(f"{key}: median {np.median(v):.3f} mean {np.mean(v):.3f} (n={len(v)})")


def per_text(run: Path, tr) -> None:
    """Per replicate (2 texts) of one run: each static K and the adaptive arm, simulated."""
    _, steps_of = load_run(run)
    for scen in PROMPT:
        for rep in reps_of(steps_of, tr, scen):
            ms_k, ms_pre = costs(steps_of, scen, rep)
            t = {f"K{k}": play(PolicyConfig.constant(k).build(), tr, scen, rep, ms_k, ms_pre,
                               random.Random(0), noise=0.0) for k in range(6)}
            t["adaptive"] = play(adaptive(run, {}).build(), tr, scen, rep, ms_k, ms_pre,
                                 random.Random(0), noise=0.0)
            print(f"{scen} rep {rep}: " + " ".join(f"{a} {t['K0'] / v:.2f}" for a, v in t.items()
                                                   if a != "K0"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("configs", nargs="*", help="field=value[,field=value] per config")
    ap.add_argument("--check", type=Path, default=None)
    ap.add_argument("--per-text", type=Path, default=None)
    ap.add_argument("--measured", action="store_true")
    ap.add_argument("--steps", action="store_true")
    ap.add_argument("--min-spec", type=int, default=None,
                    help="the guard's MIN_SPEC (drafting steps before it judges), patched")
    ap.add_argument("--slow", default=None, metavar="LO:HI:F",
                    help="every arm's steps that start LO..HI s into its trial F times slower")
    args = ap.parse_args()
    slow = None
    if args.slow:
        lo, hi, f = args.slow.split(":")
        slow = (float(lo), float(hi), float(f))
    if args.min_spec is not None:
        guard.MIN_SPEC = args.min_spec
    loaded = [(Path(d), load_run(Path(d))) for d in RUNS]
    runs = [(run, steps_of) for run, (_, steps_of) in loaded]
    # every run's static arms reveal the same texts (seed 0); replicates 7-20 only in the runs
    # that had them (grid 43 on): the union of what every run's arms saw
    obs = collections.defaultdict(lambda: collections.defaultdict(dict))
    for run, (run_obs, _) in loaded:
        for key, pos in run_obs.items():
            for g, seen in pos.items():
                obs[key][g].update({(run.name, arm): c for arm, c in seen.items()})
    tr = traces(obs)
    if args.check:
        check(args.check, tr)
        return
    if args.per_text:
        per_text(args.per_text, tr)
        return
    if args.measured:
        measured(runs)
        return
    if args.steps:
        step_costs(runs)
        return
    for arg in args.configs or [""]:
        over = {a.split("=")[0]: ast.literal_eval(a.split("=")[1]) for a in arg.split(",") if a}
        res = evaluate(runs, tr, over, slow=slow)
        line = []
        for scen, gm in res.items():
            best = max((a for a in gm if a != "adaptive"), key=gm.get)
            statics = " ".join(f"{a} {gm[a]:.3f}" for a in gm if a not in ("K0", "adaptive"))
            line.append(f"{scen}: {statics} adaptive {gm['adaptive']:.3f} -> "
                        f"/{best} {gm['adaptive'] / gm[best]:.4f}")
        print(f"{arg or 'defaults'}\n  " + "\n  ".join(line), flush=True)


if __name__ == "__main__":
    main()
