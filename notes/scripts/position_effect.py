"""Run-position effect in adaptive grid runs: log tok/s = cell x arm + cell x replicate + position,
least squares over one or more results files (twenty-third stop).
  .venv/bin/python notes/scripts/position_effect.py RESULTS.jsonl [RESULTS.jsonl ...]"""
import json, sys, math, collections
import numpy as np
rows = []
for path in sys.argv[1:]:
    for l in open(path):
        r = json.loads(l)
        if r.get('type') != 'trial' or r.get('failed') or r.get('warmup'): continue
        rows.append((path, r['scenario'], r['arm'], r['replicate'], r['position'], math.log(r['metrics']['output_tok_s'])))
ca = sorted({(p, s, a) for p, s, a, *_ in rows}); cr = sorted({(p, s, rep) for p, s, a, rep, *_ in rows})
pos = sorted({r[4] for r in rows})
ica = {k: i for i, k in enumerate(ca)}; icr = {k: i for i, k in enumerate(cr)}
n = len(rows); X = np.zeros((n, len(ca) + len(cr) + len(pos) - 1)); y = np.zeros(n)
for i, (p, s, a, rep, po, ly) in enumerate(rows):
    X[i, ica[(p, s, a)]] = 1; X[i, len(ca) + icr[(p, s, rep)]] = 1
    if po > 0: X[i, len(ca) + len(cr) + po - 1] = 1
    y[i] = ly
coef, *_ = np.linalg.lstsq(X, y, rcond=None)
res = y - X @ coef
dof = n - np.linalg.matrix_rank(X); s2 = (res @ res) / dof
cov = s2 * np.linalg.pinv(X.T @ X)
print('n', n, 'residual sd', round(math.sqrt(s2), 4))
for j, po in enumerate(pos[1:]):
    k = len(ca) + len(cr) + j
    print(f'position {po} vs 0: {math.exp(coef[k]):.3f} +- {1.96*math.sqrt(cov[k,k]):.3f}')
# which positions the adaptive arms got
cnt = collections.Counter((a, po) for p, s, a, rep, po, ly in rows if a.startswith('adaptive'))
print(sorted(cnt.items()))
