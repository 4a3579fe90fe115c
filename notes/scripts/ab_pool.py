"""Paired ratios of a bench results file: per scenario, each arm's geometric-mean ratio to no-spec
over replicates with a percentile-bootstrap 95 % CI, the ratio to the best static K, and the
paired ratio of two named arms. A diagnostic script (2026-12-01).
  python notes/scripts/ab_pool.py results.jsonl [arm_a arm_b]"""
import collections, json, math, random, sys

path = sys.argv[1]
pair = sys.argv[2:4] if len(sys.argv) >= 4 else ["adaptive", "adaptive-boxtrust"]
d: dict = collections.defaultdict(dict)
hist: dict = collections.defaultdict(collections.Counter)
for line in open(path):
    r = json.loads(line)
    if r.get("type") != "trial" or r.get("failed") or r.get("warmup"):
        continue
    d[(r["scenario"], r["arm"])][r["replicate"]] = r["metrics"]["output_tok_s"]
    for k, n in (r.get("k_histogram") or {}).items():
        hist[(r["scenario"], r["arm"])][int(k)] += n


def ci(xs, reps=4000):
    rnd, n, ms = random.Random(0), len(xs), []
    for _ in range(reps):
        ms.append(sum(xs[rnd.randrange(n)] for _ in range(n)) / n)
    ms.sort()
    return math.exp(ms[int(0.025 * reps)]), math.exp(ms[int(0.975 * reps)])


scenarios = list(dict.fromkeys(s for s, _ in d))
arms = list(dict.fromkeys(a for _, a in d if a != "no-spec"))
for scen in scenarios:
    base = d[(scen, "no-spec")]
    print(f"{scen}: no-spec median {sorted(base.values())[len(base) // 2]:.2f} tok/s, "
          f"{len(base)} replicates")
    ratio = {}
    for arm in arms:
        logs = [math.log(v / base[rep]) for rep, v in d[(scen, arm)].items() if rep in base]
        ratio[arm] = math.exp(sum(logs) / len(logs))
        lo, hi = ci(logs)
        print(f"  {arm:20s} {ratio[arm]:.3f} [{lo:.3f}, {hi:.3f}]  K steps "
              f"{dict(sorted(hist[(scen, arm)].items()))}")
    best = max(v for a, v in ratio.items() if a.startswith("static"))
    for arm in arms:
        if not arm.startswith("static"):
            print(f"  {arm} / best static: {ratio[arm] / best:.3f}")
    if all((scen, a) in d for a in pair):
        pa = [math.log(d[(scen, pair[0])][r] / d[(scen, pair[1])][r]) for r in base
              if r in d[(scen, pair[0])] and r in d[(scen, pair[1])]]
        lo, hi = ci(pa)
        print(f"  {pair[0]} / {pair[1]} paired: {math.exp(sum(pa) / len(pa)):.3f} "
              f"[{lo:.3f}, {hi:.3f}]")
