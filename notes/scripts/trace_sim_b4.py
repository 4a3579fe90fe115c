"""Trace-driven simulator of the demos' B = 4 scenarios (forty-second stop, issue 14).

The B = 1 simulator (trace_sim.py) extended to continuous batching. For each stored AVX-512 demo
with B = 4 scenarios (8 requests, 4 slots, a finished request's slot refilled before the next
step; the same requests in every arm of a replicate):
- the batch of every recorded step is rebuilt (as replay_steps.py does), so each row of the
  step log is known as (request, output index g, context);
- greedy acceptance per request and output index, c[g], is read off the speculative static arms
  (static-K*, batch-only, 2-D): a row drafting k that accepted a gives c = 1 on g..g+a-1 and
  c = 0 at g+a when a < k; where the arms disagree the majority wins; unseen indexes take the
  index before;
- step time is a least-squares fit over every recorded step of the scenario (all arms, all
  replicates of the demo) on the adaptive policy's own features, its max K term as one
  deviation per deepest K (ridge: a K no arm ran stays on the line): T = a + b.rows +
  c.sum ctx + d.sum K + e.sum K.ctx + f.max K + g.prefill tokens + h[max K];
- a policy is played on those traces and that cost model: the adaptive arm (the demo's own
  AdaptiveConfig, the current code), each static arm, and variants of the adaptive arm: its
  config's fields, `cost.FIELD` of its cost prior, `per_request_k`, `oracle_cost=True` (its
  prior refitted to the recorded steps) and `up_probe=N` (every N-th full-batch step at one K
  drafts K + 1).
Reported per scenario, as geometric means over demos x replicates: each arm's simulated
no-spec time / arm time beside the measured one (K1..K5: every static K simulated on every
cell), adaptive / 2-D simulated and measured, and adaptive / the pooled best static K.
  PYTHONPATH=notes/scripts .venv/bin/python notes/scripts/trace_sim_b4.py [--fit] [--demos GLOB]
      ['field=value,...' ...]   (one quoted argument per adaptive config to score beside)
"""
import argparse
import ast
import collections
import dataclasses
import glob
import math
from pathlib import Path

import numpy as np

from demo_dir import load_demo
from specsched.policy import BatchState, PolicyConfig, RequestOutcome, StepOutcome
from specsched.policy.caps import draft_room
from specsched.policy.cost import fit_step_cost, step_features

DEMOS_GLOB = "benchmarks/results/demo/2026-12-0[56]-*avx512*"
DEMOS = sorted(glob.glob(DEMOS_GLOB))
STATIC = ("static", "batch-only", "2-D")
RIDGE_STEPS = 10.0


@dataclasses.dataclass
class Cell:
    """One (demo, scenario, replicate): its requests, concurrency, traces and recorded trials."""
    prompts: list[int]
    outputs: list[int]
    prefill: list[int]  # each request's prefill tokens (the part not cached), from the steps
    conc: int
    max_len: int
    trials: dict  # arm -> trial record
    c: dict = dataclasses.field(default_factory=dict)  # request -> [0/1 per output index]


class Slots:
    """The engine's continuous batching of one cell: requests in submission order, at most
    `conc` at once, a finished request's slot refilled before the next step; out[i]: output
    tokens so far (0: its prompt prefills this step)."""

    def __init__(self, cell: Cell) -> None:
        self.cell, self.queue, self.active, self.out = cell, list(range(len(cell.prompts))), [], {}

    def step(self):
        """(decoding requests, prefilling requests) of the next step."""
        while self.queue and len(self.active) < self.cell.conc:
            i = self.queue.pop(0)
            self.active.append(i)
            self.out[i] = 0
        return ([i for i in self.active if self.out[i] > 0],
                [i for i in self.active if self.out[i] == 0])

    def advance(self, dec, accepted, pre) -> None:
        for i, a in zip(dec, accepted):
            self.out[i] += a + 1
        for i in pre:
            self.out[i] = 1
        self.active = [i for i in self.active if self.out[i] < self.cell.outputs[i]]

    def busy(self) -> bool:
        return bool(self.queue or self.active)


def rebuild(cell: Cell, steps):
    """Yield (step, decoding requests, their contexts and gs, prefilling requests)."""
    slots = Slots(cell)
    for step in steps:
        dec, pre = slots.step()
        if len(dec) != len(step[2]):
            raise ValueError("step log does not match the rebuilt batch")
        out = slots.out
        yield step, dec, [cell.prompts[i] + out[i] - 1 for i in dec], [out[i] for i in dec], pre
        slots.advance(dec, step[3], pre)


def features(n_rows, ctx, ks, prefill):
    """The policy's terms, with the deepest K as one indicator per K (the step's shape in K:
    at B = 4 on the AVX-512 EPYC a K = 3 verify, 16 rows, is cheap against K = 2 and 4)."""
    ks, ctx = np.asarray(ks, float), np.asarray(ctx, float)
    deepest = int(ks.max(initial=0))
    return [1.0, n_rows, ctx.sum(), ks.sum(), (ks * ctx).sum(), deepest, prefill] + [
        float(deepest == k) for k in range(1, 6)]


def load(demo: str):
    exp, profile, trials = load_demo(Path(demo))
    cells = {}
    for t in trials:
        if "B4" not in t["scenario"]:
            continue
        key = (t["scenario"], t["replicate"])
        if key not in cells:
            scen = exp.scenario(t["scenario"])
            reqs = t["requests"]
            cells[key] = Cell([r["num_prompt_tokens"] for r in reqs],
                              [r["num_output_tokens"] for r in reqs], [0] * len(reqs),
                              scen.concurrency, dict(exp.backend_options)["max_model_len"], {})
        cells[key].trials[t["arm"]] = t
    fits = {}
    for key, cell in cells.items():
        obs = collections.defaultdict(lambda: collections.defaultdict(list))
        nospec = cell.trials["no-spec"]["extra"]["steps"]
        for step, _dec, _ctx, _g, pre in rebuild(cell, nospec):
            for i in pre:
                cell.prefill[i] = step[1] // len(pre)
        for arm, t in cell.trials.items():
            if not arm.startswith(STATIC):
                continue
            for step, dec, _ctx, gs, _pre in rebuild(cell, t["extra"]["steps"]):
                for i, g, k, a in zip(dec, gs, step[2], step[3]):
                    for j in range(a):
                        obs[i][g + j].append(1)
                    if a < k:
                        obs[i][g + a].append(0)
        for i, pos in obs.items():
            c: list[int] = []
            for g in range(cell.outputs[i] + 8):
                v = pos.get(g, [])
                c.append((1 if 2 * sum(v) >= len(v) else 0) if v else (c[-1] if c else 1))
            cell.c[i] = c
    for scen in {s for s, _ in cells}:
        X, y = [], []
        for (s, _), cell in cells.items():
            if s != scen:
                continue
            for t in cell.trials.values():
                for step, dec, ctx, _g, pre in rebuild(cell, t["extra"]["steps"]):
                    X.append(features(len(dec) + len(pre), ctx, step[2], step[1]))
                    y.append(step[0])
        # the indicators are deviations from the linear max K term, shrunk to 0 by a ridge (a
        # deepest K no arm ran keeps the linear term: RIDGE_STEPS pseudo-steps of 0 ms each)
        X, y = np.asarray(X), np.asarray(y)
        pseudo = np.zeros((5, X.shape[1]))
        pseudo[:, -5:] = np.eye(5) * math.sqrt(RIDGE_STEPS)
        fits[scen] = np.linalg.lstsq(np.vstack([X, pseudo]), np.concatenate([y, np.zeros(5)]),
                                     rcond=None)[0]
    return exp, cells, fits


def play(policy, cell: Cell, coef, ks_out=None) -> float:
    """Seconds for the cell's 8 requests under `policy` (noise-free, the fitted step time)."""
    slots, total = Slots(cell), 0.0
    out = slots.out
    while slots.busy():
        dec, pre = slots.step()
        sched = dec + pre
        computed = [cell.prompts[i] + out[i] - 1 if out[i] else 0 for i in sched]
        room = [draft_room(cell.max_len, cell.prompts[i] + out[i], cell.outputs[i], out[i])
                if out[i] else 0 for i in sched]
        d = policy.decide(BatchState(tuple(computed), tuple(cell.prompts[i] for i in sched),
                                     tuple(room), tuple(sched)))
        ks = [min(k, r) for k, r in zip(d.num_spec_tokens[:len(dec)], room)]
        acc = []
        for i, k in zip(dec, ks):
            a = 0
            while a < k and cell.c[i][out[i] + a]:
                a += 1
            acc.append(a)
        prefill = sum(cell.prefill[i] for i in pre)
        ms = float(np.dot(coef, features(len(sched), computed[:len(dec)], ks, prefill)))
        total += ms / 1e3
        if ks_out is not None and dec:
            ks_out.append("".join(map(str, ks)))
        policy.observe(StepOutcome(
            len(sched), tuple(RequestOutcome(i, c, k, a) for i, c, k, a in
                              zip(dec, computed[:len(dec)], ks, acc)),
            ms / 1e3, max(ks, default=0), prefill,
            tuple(cell.prompts[i] - 1 for i in pre) if prefill else ()))
        slots.advance(dec, acc, pre)
    return total


def arm_policy(exp, name, over=None):
    """The demo's arm; `over` replaces AdaptiveConfig fields, and `cost.FIELD` ones of its cost
    prior (e.g. cost.shape=None: the profile's plane without its measured shape), and
    per_request_k the PolicyConfig's."""
    pc = next(a for a in exp.arms if a.name == name).policy
    if over and "per_request_k" in over:
        over = dict(over)
        pc = dataclasses.replace(pc, per_request_k=over.pop("per_request_k"))
    if over and pc.adaptive is not None:
        cost = {k[5:]: v for k, v in over.items() if k.startswith("cost.")}
        cfg = dataclasses.replace(pc.adaptive, **{k: v for k, v in over.items()
                                                  if not k.startswith("cost.")})
        if cost:
            cfg = dataclasses.replace(cfg, cost_prior=dataclasses.replace(cfg.cost_prior, **cost))
        pc = dataclasses.replace(pc, adaptive=cfg)
    return pc


def oracle_cost(exp, cells, scen):
    """The adaptive arm's cost prior refitted to the scenario's recorded steps (the policy's
    own features, no shape): a prior that knows this simulation's step times."""
    prior = arm_policy(exp, "adaptive").adaptive.cost_prior
    xs, ys = [], []
    for (s, _rep), cell in cells.items():
        if s == scen:
            for t in cell.trials.values():
                for step, _dec, ctx, _g, _pre in rebuild(cell, t["extra"]["steps"]):
                    xs.append(step_features(ctx, step[2], step[1], prior.q_tile))
                    ys.append(step[0] / 1e3)
    return dataclasses.replace(prior, coef=fit_step_cost(np.asarray(xs), np.asarray(ys)).coef,
                               shape=None)


class UpProbe:
    """An upward probe outside the policy: every `every`-th step at which the policy gives all
    rows of a full batch one K (0 < K < max_k) drafts K + 1 instead (capped by each row's
    room); the policy observes that step as it ran."""

    def __init__(self, policy, every: int, rows: int) -> None:
        self.p, self.every, self.rows, self.n = policy, every, rows, 0

    max_k = property(lambda self: self.p.max_k)

    def decide(self, batch):
        d = self.p.decide(batch)
        ks = d.num_spec_tokens
        if len(ks) == self.rows and len(set(ks)) == 1 and 0 < ks[0] < self.p.max_k:
            self.n += 1
            if self.n % self.every == 0:
                room = batch.room or (self.p.max_k,) * len(ks)
                new = tuple(min(k + 1, max(r, 0)) for k, r in zip(ks, room))
                return dataclasses.replace(d, num_spec_tokens=new, step_k=max(new))
        return d

    def observe(self, outcome) -> None:
        self.p.observe(outcome)


def adaptive_variant(exp, cells, scen, cell, over):
    """The adaptive arm with `over` (see arm_policy), plus two keys of this simulator:
    oracle_cost=True (the prior `oracle_cost`) and up_probe=N (`UpProbe` every N)."""
    over = dict(over)
    oracle, every = over.pop("oracle_cost", False), over.pop("up_probe", 0)
    pc = arm_policy(exp, "adaptive", over)
    if oracle:
        pc = dataclasses.replace(pc, adaptive=dataclasses.replace(
            pc.adaptive, cost_prior=oracle_cost(exp, cells, scen)))
    policy = pc.build()
    return UpProbe(policy, every, cell.conc) if every else policy


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("configs", nargs="*", help="field=value[,field=value] per adaptive config")
    ap.add_argument("--fit", action="store_true", help="the cost fit's error per arm")
    ap.add_argument("--demos", default=DEMOS_GLOB, help="demo directories (a glob)")
    args = ap.parse_args()
    sim = collections.defaultdict(list)  # (scen, arm) -> log(no-spec / arm), simulated
    meas = collections.defaultdict(list)
    fit_err = collections.defaultdict(list)
    configs = [{a.split("=")[0]: ast.literal_eval(a.split("=")[1]) for a in c.split(",") if a}
               for c in (args.configs or [])]
    for demo in sorted(glob.glob(args.demos)):
        exp, cells, fits = load(demo)
        for (scen, _rep), cell in cells.items():
            coef = fits[scen]
            base_meas = cell.trials["no-spec"]["metrics"]["wall_s"]
            t0 = play(arm_policy(exp, "no-spec").build(), cell, coef)
            for arm, t in cell.trials.items():
                rec = sum(float(np.dot(coef, features(len(dec) + len(pre), ctx, s[2], s[1])))
                          for s, dec, ctx, _g, pre in rebuild(cell, t["extra"]["steps"]))
                fit_err[(scen, arm)].append(rec / sum(s[0] for s in t["extra"]["steps"]))
                meas[(scen, arm)].append(math.log(base_meas / t["metrics"]["wall_s"]))
                if arm != "no-spec":
                    sim[(scen, arm)].append(math.log(t0 / play(arm_policy(exp, arm).build(),
                                                               cell, coef)))
            for k in range(1, 6):  # every static K on every cell (the pooled best static K)
                sim[(scen, f"K{k}")].append(math.log(t0 / play(PolicyConfig.constant(k).build(),
                                                               cell, coef)))
            for n, over in enumerate(configs):
                policy = adaptive_variant(exp, cells, scen, cell, over)
                sim[(scen, f"cfg{n}")].append(math.log(t0 / play(policy, cell, coef)))
    gm = {k: math.exp(float(np.mean(v))) for k, v in sim.items()}
    mm = {k: math.exp(float(np.mean(v))) for k, v in meas.items()}
    for scen in sorted({s for s, _ in sim}):
        n = len(sim[(scen, "adaptive")])
        print(f"{scen} ({n} demo replicates): arm sim / measured (vs no-spec)")
        for (s, arm), v in sorted(gm.items()):
            if s == scen:
                m = f"{mm[(s, arm)]:.3f}" if (s, arm) in mm else "-"
                extra = (f"  fit/recorded {np.mean(fit_err[(s, arm)]):.3f}"
                         if args.fit and (s, arm) in fit_err else "")
                print(f"  {arm:11s} {v:.3f} / {m}{extra}")
        best = max((f"K{k}" for k in range(1, 6)), key=lambda a: gm[(scen, a)])
        for arm in ["adaptive"] + [f"cfg{i}" for i in range(len(configs))]:
            print(f"  {arm} / 2-D: sim {gm[(scen, arm)] / gm[(scen, '2-D')]:.4f}, / the pooled "
                  f"best static K ({best}) {gm[(scen, arm)] / gm[(scen, best)]:.4f}"
                  + (f", measured {mm[(scen, arm)] / mm[(scen, '2-D')]:.4f}"
                     if arm == "adaptive" else f"  ({args.configs[int(arm[3:])]})"))


if __name__ == "__main__":
    main()
