"""Two arms of one results file, paired by replicate: geometric mean of their output_tok_s ratios
with a 95 % t-interval on the logs (twenty-fifth stop).
  .venv/bin/python notes/scripts/paired_ratio.py RESULTS.jsonl ARM_A ARM_B [SCENARIO]
PER_REP=1 (env) also prints each replicate's ratio."""
import collections
import json
import math
import os
import sys

from scipy import stats

path, a, b = sys.argv[1:4]
scenario = sys.argv[4] if len(sys.argv) > 4 else None
d = collections.defaultdict(dict)
for line in open(path):
    r = json.loads(line)
    if r.get('type') != 'trial' or r.get('failed') or r.get('warmup'): continue
    if scenario is not None and r['scenario'] != scenario: continue
    d[r['arm']][r['replicate']] = r['metrics']['output_tok_s']
reps = sorted(set(d[a]) & set(d[b]))
logs = [math.log(d[a][k] / d[b][k]) for k in reps]
n = len(logs); m = sum(logs) / n
h = stats.t.ppf(0.975, n - 1) * math.sqrt(sum((x - m) ** 2 for x in logs) / (n - 1)) / math.sqrt(n)
if os.environ.get("PER_REP"):
    print("per replicate:", " ".join(f"{math.exp(x):.3f}" for x in logs))
print(f"{a} / {b}: {math.exp(m):.3f} [{math.exp(m - h):.3f}, {math.exp(m + h):.3f}] (n={n})")
