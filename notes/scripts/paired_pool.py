"""Paired ratio of two arms pooled over several bench results files (replicates of one
scenario under different seeds): per file and pooled, the geometric mean of arm_a / arm_b over
paired replicates with a t-interval on the log ratios (the figure the nineteenth and twentieth
stops reported for the phases bench). Also each arm vs no-spec, pooled.
  .venv/bin/python notes/scripts/paired_pool.py ARM_A ARM_B FILE.jsonl [FILE.jsonl ...]"""
import collections
import json
import math
import sys

from scipy import stats


def load(path: str) -> dict[tuple[str, str], dict[int, float]]:
    d: dict[tuple[str, str], dict[int, float]] = collections.defaultdict(dict)
    for line in open(path):
        r = json.loads(line)
        if r.get("type") != "trial" or r.get("failed") or r.get("warmup"):
            continue
        d[(r["scenario"], r["arm"])][r["replicate"]] = r["metrics"]["output_tok_s"]
    return d


def interval(logs: list[float]) -> str:
    n = len(logs)
    m = sum(logs) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in logs) / (n - 1))
    h = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    return f"{math.exp(m):.3f} [{math.exp(m - h):.3f}, {math.exp(m + h):.3f}] (n={n})"


def main() -> None:
    a, b, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
    pooled: dict[str, list[float]] = collections.defaultdict(list)
    for path in paths:
        d = load(path)
        for scen in dict.fromkeys(s for s, _ in d):
            base = d[(scen, "no-spec")]
            pairs = {f"{a} / {b}": (d[(scen, a)], d[(scen, b)])}
            for arm in dict.fromkeys(x for s, x in d if s == scen and x != "no-spec"):
                pairs[f"{arm} / no-spec"] = (d[(scen, arm)], base)
            for name, (xa, xb) in pairs.items():
                logs = [math.log(xa[r] / xb[r]) for r in sorted(set(xa) & set(xb))]
                pooled[name].extend(logs)
                print(f"{path} {scen}: {name} {interval(logs)}")
    for name, logs in pooled.items():
        print(f"pooled: {name} {interval(logs)}")


main()
