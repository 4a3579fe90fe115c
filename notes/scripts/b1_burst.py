"""B = 1 acceptance clustering on an adaptive grid's static arms (thirty-seventh stop): per cell and arm, the
first position's acceptance after a rejected vs an accepted first position of the same request.
  .venv/bin/python notes/scripts/b1_burst.py RESULTS.jsonl"""
import collections, json, sys
path = sys.argv[1]
seqs = collections.defaultdict(list)  # (scenario, arm) -> list of per-request sequences
for line in open(path):
    t = json.loads(line)
    if t.get('type') != 'trial' or t.get('failed') or t.get('warmup'): continue
    if not t['scenario'].startswith('B1-'): continue
    if not t['arm'].startswith('static-K'): continue
    cur = []
    for ms, prefill, ks, acc, *_ in t['extra']['steps']:
        if prefill:
            if cur: seqs[(t['scenario'], t['arm'])].append(cur)
            cur = []
        if ks and ks[0] > 0: cur.append((ks[0], acc[0]))
    if cur: seqs[(t['scenario'], t['arm'])].append(cur)
for key in sorted(seqs):
    tr = collections.Counter(); hist = collections.Counter(); n=0
    for s in seqs[key]:
        prev = None
        for k, a in s:
            # skip capped last steps (k < arm K)
            first = a > 0
            hist[a] += 1; n += 1
            if prev is not None: tr[(prev, first)] += 1
            prev = first
    p = sum(v for kk, v in hist.items() if kk > 0) / n
    pa_r = tr[(False, True)] / max(1, tr[(False, True)] + tr[(False, False)])
    pa_a = tr[(True, True)] / max(1, tr[(True, True)] + tr[(True, False)])
    print(key, f"n={n} p0={p:.3f} P(acc|prev rej)={pa_r:.3f} (n={tr[(False,True)]+tr[(False,False)]}) P(acc|prev acc)={pa_a:.3f}", dict(sorted(hist.items())))
