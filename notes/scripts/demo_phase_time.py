"""Where the time of each demo arm goes at one scenario (forty-first stop), averaged over every AVX-512 demo
of 2026-12-05..06: prefill steps, the first three decode steps (start), full-batch steps, the tail
(fewer rows than the concurrency); ms, steps and tokens per trial.
  .venv/bin/python notes/scripts/demo_phase_time.py SCENARIO"""
import json, glob, collections, sys
import numpy as np
SC = sys.argv[1]
acc = collections.defaultdict(lambda: collections.defaultdict(list))
for d in sorted(glob.glob('benchmarks/results/demo/2026-12-0[56]-*avx512*')):
    try: rows=[json.loads(l) for l in open(d+'/results.jsonl')]
    except FileNotFoundError: continue
    for r in rows:
        if r.get('type')!='trial' or r.get('warmup') or r.get('failed') or r['scenario']!=SC: continue
        st = r['extra']['steps']
        ph = collections.Counter(); n = collections.Counter(); tok = collections.Counter()
        first_decode = None
        for i, (ms, pre, ks, a) in enumerate(st):
            if pre: key = 'prefill'
            elif len(ks) == 4 and i <= 3 and r['arm']: key = 'start'
            elif len(ks) == 4: key = 'full'
            else: key = 'tail'
            ph[key] += ms; n[key] += 1; tok[key] += sum(x + 1 for x in a)
        for k in ('prefill','start','full','tail'):
            acc[r['arm']][k].append((ph[k], n[k], tok[k]))
        acc[r['arm']]['total'].append((sum(s[0] for s in st), len(st), 0))
for arm, d in acc.items():
    print(f"{arm:11s}", '  '.join(f"{k} {np.mean([x[0] for x in v]):6.0f}ms/{np.mean([x[1] for x in v]):4.1f}st/{np.mean([x[2] for x in v]):5.1f}tok" for k, v in d.items()))
