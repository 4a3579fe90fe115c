"""Replay a recorded trial's step log through a fresh K policy, offline and deterministically
(thirty-eighth stop): the batch of each step is rebuilt from the trial's requests (prompt and
output lengths, submission order, the scenario's concurrency: a finished request's slot is
refilled before the next step), the policy decides, and the RECORDED outcome (K, accepted per
request, wall ms, prefill tokens) is fed back. While the replayed K match the recorded ones the
policy sees exactly what it saw in the run, so its internal state at a step (cell, trust caps,
slow-start caps, anchor, the optimizer's goodput per uniform K) says WHY it chose that K.
A replayed K that differs is marked "!=" (the replay then diverges: it keeps feeding the
recorded K, as what the run did).
  (each line: the step, the recorded and replayed K, accepted drafts, wall ms, prefill tokens,
  then the cell, its trust cap and speed, the guard, the mean acceptance estimate per position,
  each request's last K and slow-start flag, the optimizer's predicted goodput of each uniform
  K over K = 0's and the step times it assumed, caps, anchor and the chosen K's predicted gain)
  .venv/bin/python notes/scripts/replay_steps.py EXPERIMENT.yaml RESULTS.jsonl SCENARIO ARM REP
     [field=value ...]   (AdaptiveConfig overrides, e.g. margin=0.05: what-if on the same log)"""
import dataclasses
import json
import sys

import numpy as np

from specsched.bench.load import load_experiment
from specsched.policy import BatchState, RequestOutcome, StepOutcome
from specsched.policy.acceptance_stats import expected_tokens_table
from specsched.policy.optimize import evaluate
from specsched.policy.adaptive import AdaptivePolicy
from specsched.policy.adaptive_config import cell_of
from specsched.policy.caps import draft_room

exp_path, res_path, scen_name, arm_name, rep = sys.argv[1:6]
overrides = dict(a.split("=", 1) for a in sys.argv[6:])
exp = load_experiment(exp_path)
arm = next(a for a in exp.arms if a.name == arm_name)
scen = exp.scenario(scen_name)
trial = next(t for t in map(json.loads, open(res_path)) if t.get("type") == "trial"
             and t["scenario"] == scen_name and t["arm"] == arm_name
             and t["replicate"] == int(rep) and not t["warmup"])
pc = arm.policy
if overrides:
    cfg = pc.adaptive
    typed = {k: type(getattr(cfg, k))(v) if not isinstance(getattr(cfg, k), bool)
             else v.lower() in ("1", "true") for k, v in overrides.items()}
    pc = dataclasses.replace(pc, adaptive=dataclasses.replace(cfg, **typed))
policy = pc.build()
max_model_len = dict(exp.backend_options).get("max_model_len", 1 << 30)
prompts = [r["num_prompt_tokens"] for r in trial["requests"]]
outputs_wanted = [r["num_output_tokens"] for r in trial["requests"]]
conc = scen.concurrency or len(prompts)
queue = list(range(len(prompts)))
active: list[int] = []  # schedule order
out = {}  # request -> output tokens so far (0: not prefilled)
mismatches = 0
for n_step, (ms, prefill, ks_rec, acc_rec, *_) in enumerate(trial["extra"]["steps"]):
    while queue and len(active) < conc:
        i = queue.pop(0); active.append(i); out[i] = 0
    dec = [i for i in active if out[i] > 0]
    pre = [i for i in active if out[i] == 0]
    if len(dec) != len(ks_rec):
        print(f"step {n_step}: rebuilt {len(dec)} decoding, recorded {len(ks_rec)}: stop"); break
    sched = dec + pre
    computed = [prompts[i] + out[i] - 1 if out[i] else 0 for i in sched]
    room = [draft_room(max_model_len, prompts[i] + out[i], outputs_wanted[i], out[i])
            if out[i] else 0 for i in sched]
    batch = BatchState(tuple(computed), tuple(prompts[i] for i in sched), tuple(room),
                       tuple(sched))
    seen: dict[str, str] = {}
    if isinstance(policy, AdaptivePolicy):  # the optimizer's view (as policy_trace.py -w)
        orig = policy._choose

        def choose(acc, ctx, costs, caps, anchor, remaining=None, grew=False):  # type: ignore
            base, added, per_step = costs
            tokens = expected_tokens_table(acc)
            g = [evaluate(tokens, base, added, per_step, np.full(len(ctx), k)).goodput
                 for k in range(policy.max_k + 1)]
            ks, gain = orig(acc, ctx, costs, caps, anchor, remaining, grew)
            seen["w"] = ("g/g0 " + " ".join(f"{x / g[0]:.3f}" for x in g) + " | T " + " ".join(
                f"{1e3 * (base + added.sum(axis=0)[k] + per_step * k):.0f}"
                for k in range(policy.max_k + 1))
                + f" | caps {''.join(map(str, caps))} anchor {''.join(map(str, anchor))}"
                + f" | gain {gain:.3f}")
            return ks, gain
        policy._choose = choose  # type: ignore[method-assign]
    d = policy.decide(batch)
    if isinstance(policy, AdaptivePolicy):
        policy._choose = orig  # type: ignore[method-assign]
    ks_rep = list(d.num_spec_tokens[:len(dec)])
    why = ""
    if isinstance(policy, AdaptivePolicy) and dec:
        mean_ctx = sum(computed[:len(dec)]) // len(dec)
        cell = cell_of(len(dec), mean_ctx)
        st = policy.cell_state.get(cell)
        trust = policy._trust._cells.get(cell)
        tcap = "-" if trust is None else trust.cap(st.steps - 1 if st else 0)
        reqs = [policy.acceptance.requests[i] for i in dec]
        acc = policy.acceptance.acceptance_evidence(reqs, computed[:len(dec)])[0].mean(0)
        speed = "-" if trust is None else f"{trust.speed(policy._judge):.2f}"
        why = (f"cell {cell} trust cap {tcap} verified {getattr(trust, 'verified', '-')} "
               f"speed {speed} "
               f"guard {'on' if st and st.verdict_on else 'off'} "
               f"acc {' '.join(f'{a:.2f}' for a in acc)} "
               f"last_k {''.join(str(r.last_k) for r in reqs)} "
               f"capped {''.join('c' if r.capped else '.' for r in reqs)} {seen.get('w', '')}")
    flag = "  " if ks_rep == ks_rec else "!="
    mismatches += ks_rep != ks_rec
    print(f"{n_step:3d} B{len(sched)} ctx {sum(computed[:len(dec)]) // max(len(dec), 1):4d} "
          f"rec {''.join(map(str, ks_rec)):5s} {flag} rep {''.join(map(str, ks_rep)):5s} "
          f"acc {''.join(map(str, acc_rec)):5s} {ms:6.1f} ms +{prefill:<3d} {why}")
    policy.observe(StepOutcome(
        len(sched), tuple(RequestOutcome(i, c, k, a) for i, c, k, a in
                          zip(dec, computed[:len(dec)], ks_rec, acc_rec, strict=True)),
        ms / 1e3, max(ks_rec, default=0), prefill,
        tuple(prompts[i] - 1 for i in pre) if prefill else ()))  # each chunk ends its prompt
    for i, a in zip(dec, acc_rec, strict=True):
        out[i] += a + 1
    for i in pre:
        out[i] = 1
    for i in list(active):
        if out[i] >= outputs_wanted[i]:
            active.remove(i)
print(f"{mismatches} replayed steps differ from the recorded K")
