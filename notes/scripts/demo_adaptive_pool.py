"""Pooled adaptive / 2-D, / batch-only, / no-spec over every AVX-512 demo of 2026-12-05..06 (forty-first
stop): paired by replicate within a demo, a t-interval over all pairs.
  .venv/bin/python notes/scripts/demo_adaptive_pool.py"""
import json, glob, math, collections
import numpy as np
from scipy import stats
rows_out = collections.defaultdict(list)
for d in sorted(glob.glob('benchmarks/results/demo/2026-12-0[56]-*avx512*')):
    try: rows=[json.loads(l) for l in open(d+'/results.jsonl')]
    except FileNotFoundError: continue
    v = collections.defaultdict(dict)
    for r in rows:
        if r.get('type')!='trial' or r.get('warmup') or r.get('failed'): continue
        v[(r['scenario'], r['arm'])][r['replicate']] = r['metrics']['output_tok_s']
    for (sc, arm), reps in v.items():
        if arm != 'adaptive': continue
        for other in ('2-D', 'no-spec', 'batch-only'):
            o = v.get((sc, other))
            if not o: continue
            logs = [math.log(reps[k]/o[k]) for k in reps if k in o]
            rows_out[(sc, other)].append((d.split('/')[-1][:45], np.mean(logs), len(logs), logs))
for key, lst in sorted(rows_out.items()):
    all_logs = [x for _, _, _, l in lst for x in l]
    m = np.mean(all_logs); se = np.std(all_logs, ddof=1)/math.sqrt(len(all_logs)); h = stats.t.ppf(.975, len(all_logs)-1)*se
    per = ' '.join(f'{math.exp(mm):.3f}' for _, mm, _, _ in lst)
    print(f'{key[0]:18s} adaptive/{key[1]:10s} pooled {math.exp(m):.3f} [{math.exp(m-h):.3f}, {math.exp(m+h):.3f}] n={len(all_logs)} demos={len(lst)}: {per}')
