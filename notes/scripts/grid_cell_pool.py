"""One grid cell pooled over several grid runs: adaptive / no-spec and / the pooled best static K,
geometric mean of paired (run, replicate) ratios with a t-interval on the logs (forty-sixth stop).
  .venv/bin/python notes/scripts/grid_cell_pool.py SCENARIO RESULTS.jsonl [RESULTS.jsonl ...]"""
import collections, json, math, sys
from scipy import stats
scen, paths = sys.argv[1], sys.argv[2:]
d = collections.defaultdict(dict)
for i, p in enumerate(paths):
    for l in open(p):
        r = json.loads(l)
        if r.get('type') != 'trial' or r.get('failed') or r.get('warmup') or r['scenario'] != scen:
            continue
        d[r['arm']][(i, r['replicate'])] = r['metrics']['output_tok_s']
def iv(a, b):
    logs = [math.log(a[x] / b[x]) for x in a if x in b]; n = len(logs); m = sum(logs) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in logs) / (n - 1)); h = stats.t.ppf(.975, n - 1) * sd / math.sqrt(n)
    return f"{math.exp(m):.3f} [{math.exp(m - h):.3f}, {math.exp(m + h):.3f}] n={n}"
base = d['no-spec']
best = max((a for a in d if a.startswith('static')),
           key=lambda a: sum(math.log(d[a][x] / base[x]) for x in d[a] if x in base))
print(f"{scen:11s} {len(paths)} runs: adaptive vs no-spec {iv(d['adaptive'], base)}  vs pooled best {best} {iv(d['adaptive'], d[best])}")
