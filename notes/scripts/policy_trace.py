"""Per-step trace of a K policy on the reference engine (a diagnostic script, not part of the
package): runs arms of one scenario of an experiment and prints, per step, the batch size, K per
request, accepted drafts per request, step time (ms) and the adaptive guard's state.

  .venv/bin/python notes/scripts/policy_trace.py EXPERIMENT.yaml ARM[,ARM...] REPLICATES SCENARIO -v [-t] [-r] [-g]

(-R: each request's room, capped at 9; -t: the cost model's theta per step; -r: trust regions; -g: every cell's guard state; -w: why: the optimizer's mean acceptance per position, predicted goodput of each uniform K over K = 0's, the step times it assumed, caps and anchor.)

Used 2026-12-01 with benchmarks/results/demo/2026-12-01-wave-B4/experiment.yaml plus static-K1/K2
arms (copied with its profile and schedules), scenario long-ctx4096-B4, and with
examples/experiments/adaptive_grid_prefix.yaml, scenario B16-ctx512. SEEDS=a,b,c (env) replays
trials with a results.jsonl's own seeds (2026-12-02: the clean-clone demo's long-ctx4096-B1
adaptive trials, `SEEDS=1217011706,2097593159,27260540 ... demo-out/experiment.yaml
static-K3,adaptive 3 long-ctx4096-B1`, run inside the clone)."""
import sys

from specsched.bench.backends.base import TrialSpec
from specsched.bench.backends.engine import EngineBackend
from specsched.bench.load import load_experiment
from specsched.bench.workload import request_shapes

exp_path = sys.argv[1]
arms = sys.argv[2].split(",")
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 1
scen_name = sys.argv[4] if len(sys.argv) > 4 else "long-ctx4096-B4"
exp = load_experiment(exp_path)
backend = EngineBackend.from_options(dict(exp.backend_options))
scen = exp.scenario(scen_name)
shapes = request_shapes(scen, exp.seed)

class Rec:
    def __init__(self, p): self.p, self.log = p, []
    @property
    def max_k(self): return self.p.max_k
    def decide(self, b):
        why = {}
        if "-w" in sys.argv and hasattr(self.p, "_choose"):  # why: the optimizer's inputs
            import numpy as np
            from specsched.policy.acceptance_stats import expected_tokens_table
            from specsched.policy.optimize import evaluate
            orig_choose = self.p._choose
            def choose(acc, ctx, costs, caps, anchor, remaining=None, grew=False):
                # acc [n, max_k]: the requests' estimates (a 2026-12-06 signature)
                tokens = expected_tokens_table(acc)
                base, added, per_step = costs
                g = [evaluate(tokens, base, added, per_step, np.full(len(ctx), k)).goodput
                     for k in range(self.p.max_k + 1)]
                ks, gain = orig_choose(acc, ctx, costs, caps, anchor, remaining, grew)
                why["w"] = ("acc " + " ".join("%.2f" % x for x in acc.mean(axis=0))
                            + " | g/g0 " + " ".join("%.3f" % (x / g[0]) for x in g)
                            + " | T " + " ".join("%.0f" % (1000 * (base + added.sum(axis=0)[k] + per_step * k)) for k in range(self.p.max_k + 1))
                            + f" | caps {''.join(map(str, caps))} anchor {''.join(map(str, anchor))}"
                            + ((" | rows " + " / ".join(" ".join("%.2f" % x for x in row) for row in acc)) if "-W" in sys.argv else ""))
                return ks, gain
            self.p._choose = choose
        d = self.p.decide(b); self.cur = {"B": len(b), "ks": list(d.num_spec_tokens)}
        if why:
            self.p._choose = orig_choose
            self.cur["why"] = why["w"]
        if "-R" in sys.argv and b.room is not None:  # room: tokens a request may still emit
            self.cur["room"] = [min(x, 9) for x in b.room]
        cs = getattr(self.p, "cell_state", {})
        self.cur["guard"] = {c: (st.trips, st.guarded) for c, st in cs.items() if st.trips}
        if "-g" in sys.argv:  # every cell: steps, drafting / no-spec samples, guarded, early, trips
            self.cur["guard"] = {c: (st.steps, len(st.spec), len(st.nospec), int(st.guarded),
                                     int(st.early_probe), st.trips) for c, st in cs.items()}
        if "-r" in sys.argv and hasattr(self.p, "_trust"):  # trust regions: verified/ceiling/until
            self.cur["guard"] = {c: (t.verified, t.ceiling, t.until, self.p.cell_state[c].steps)
                                 for c, t in self.p._trust._cells.items()}
        if hasattr(self.p, "cost"):
            import numpy as np
            self.cur["theta"] = np.round(self.p.cost.theta, 4).tolist()
        return d
    def observe(self, o):
        self.cur["acc"] = [(r.num_spec_tokens, r.num_accepted_tokens) for r in o.requests]
        self.cur["t"] = round((o.step_time_s or 0) * 1000, 1)
        self.log.append(self.cur); self.p.observe(o)

import specsched.engine.engine as E

orig = E.LLMEngine.set_speculative
recs = []
def patched(self, spec, policy=None):
    orig(self, spec, policy.p if isinstance(policy, Rec) else policy)  # a warm arm's, unwrapped
    sp = getattr(self, "speculator", None)
    if sp is not None and getattr(sp, "policy", None) is not None:
        r = Rec(sp.policy); sp.policy = r; recs.append(r)
E.LLMEngine.set_speculative = patched
SEEDS = [int(x) for x in __import__("os").environ.get("SEEDS", "").split(",") if x]
summary = {}
for rep in range(reps):
    for a in arms:
        arm = exp.arm(a)
        recs.clear()
        t = TrialSpec(arm=arm, scenario=scen, shapes=shapes, replicate=rep, position=0, warmup=False, seed=SEEDS[rep] if SEEDS else rep)
        res = backend.run_trial(t)
        summary.setdefault(a, []).append(res.wall_s)
        print(f"{a:12s} rep{rep} wall {res.wall_s:.2f} steps {res.extra['num_steps']} k {res.k_histogram}", flush=True)
        if "-v" in sys.argv and recs:
            for s in [s for r in recs[:-1] for s in r.log] + [None] + recs[-1].log:
                if s is None:  # a warm arm's priming run (and earlier trials) end here
                    print("    -- measured --") if len(recs) > 1 else None
                    continue
                print("   ", s["B"], "".join(map(str, s["ks"])), "acc", "".join(str(a) for _, a in s.get("acc", [])), s.get("t"), s.get("guard"), s.get("theta") if "-t" in sys.argv else "", ("room " + "".join(map(str, s["room"]))) if "room" in s else "", s.get("why", ""))
base = sum(summary[arms[0]])/len(summary[arms[0]])
for a, w in summary.items():
    m = sum(w)/len(w); print(f"{a:12s} mean wall {m:.2f}  x{base/m:.3f}")
