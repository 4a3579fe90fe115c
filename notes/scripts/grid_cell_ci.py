"""Per cell of an adaptive grid run: each adaptive arm / no-spec and / the in-sample best static K,
geometric mean of paired replicate ratios with a t-interval on the logs (twenty-third stop).
  .venv/bin/python notes/scripts/grid_cell_ci.py RESULTS.jsonl"""
import collections, json, math, sys
from scipy import stats
d = collections.defaultdict(dict)
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get('type') != 'trial' or r.get('failed') or r.get('warmup'): continue
    d[(r['scenario'], r['arm'])][r['replicate']] = r['metrics']['output_tok_s']
def iv(xa, xb):
    logs = [math.log(xa[k] / xb[k]) for k in sorted(set(xa) & set(xb))]
    n = len(logs); m = sum(logs) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in logs) / (n - 1)); h = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    return f"{math.exp(m):.3f} [{math.exp(m-h):.3f}, {math.exp(m+h):.3f}]"
def gm(xa, xb):
    ks = sorted(set(xa) & set(xb)); return math.exp(sum(math.log(xa[k] / xb[k]) for k in ks) / len(ks))
for scen in dict.fromkeys(s for s, _ in d):
    base = d[(scen, 'no-spec')]
    statics = [a for s, a in d if s == scen and a.startswith('static')]
    best = max(statics, key=lambda a: gm(d[(scen, a)], base))
    for arm in sorted(a for s, a in d if s == scen and a.startswith('adaptive')):
        print(f"{scen:12s} {arm:14s} vs no-spec {iv(d[(scen, arm)], base)}  vs {best} {iv(d[(scen, arm)], d[(scen, best)])}  (n={len(d[(scen, arm)])})")
