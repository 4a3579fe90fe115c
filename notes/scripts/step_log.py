"""Read a bench results file step by step (twenty-eighth stop): each trial's step log (the engine
backend's `extra.steps`: wall ms, prefill tokens, K and accepted per decoding request) and, per
arm, where the wall went: the drain tail (after the first of the last `concurrency` requests
finished, the batch only shrinks) against the rest.
  .venv/bin/python notes/scripts/step_log.py RESULTS.jsonl [-s SCENARIO] [-a ARM] [-r REP] [-v]
-v prints every step: rows, K per request, accepted per request, ms, prefill tokens."""
import argparse
import collections
import json


def digits(xs: list[int]) -> str:
    return "".join(str(x) if x < 10 else f"({x})" for x in xs)


ap = argparse.ArgumentParser()
ap.add_argument("results")
ap.add_argument("-s", "--scenario")
ap.add_argument("-a", "--arm")
ap.add_argument("-r", "--rep", type=int)
ap.add_argument("-v", action="store_true")
a = ap.parse_args()
with open(a.results) as f:
    trials = [json.loads(line) for line in f]
concurrency = {s["name"]: s["concurrency"] for t in trials if t.get("type") == "header"
               for s in t["experiment"]["scenarios"]}
trials = [t for t in trials if t.get("type") == "trial" and not t.get("warmup")
          and not t.get("failed") and (a.scenario is None or t["scenario"] == a.scenario)
          and (a.arm is None or t["arm"] == a.arm) and (a.rep is None or t["replicate"] == a.rep)]
agg: dict[tuple[str, str], list[tuple[float, float, int]]] = collections.defaultdict(list)
for t in sorted(trials, key=lambda t: (t["scenario"], t["replicate"], t["position"])):
    reqs = t["requests"]
    finish = sorted(r["submit_s"] + r["latency_s"] for r in reqs)
    conc = min(concurrency.get(t["scenario"], 1), len(reqs))
    wall = t["metrics"]["wall_s"]
    tail = wall - finish[len(finish) - conc] if len(finish) >= conc else 0.0
    steps = t["extra"].get("steps")
    agg[(t["scenario"], t["arm"])].append((wall, tail, t["extra"].get("num_steps", 0)))
    print(f"{t['scenario']} rep{t['replicate']} {t['arm']:14s} wall {wall:6.2f} "
          f"tail {tail:5.2f} steps {t['extra'].get('num_steps')}"
          + ("" if steps is not None else "  (no step log: older results)"))
    if a.v and steps:
        for ms, prefill, ks, acc, *_ in steps:
            print(f"    {len(ks):3d} {digits(ks):>18s} acc {digits(acc):>18s} {ms:8.1f}"
                  + (f"  +{prefill} prefill" if prefill else ""))
print()
for (scenario, arm), v in sorted(agg.items()):
    n = len(v)
    print(f"{scenario:14s} {arm:14s} n={n} mean wall {sum(x[0] for x in v) / n:6.2f} "
          f"tail {sum(x[1] for x in v) / n:5.2f} steps {sum(x[2] for x in v) / n:6.1f}")
