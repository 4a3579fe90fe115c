"""Median K = 0 step of each adaptive arm over no-spec's, paired by replicate, at B16 x 512 (scenario
B16-ctx512), one line per results file (thirty-seventh stop).
  .venv/bin/python notes/scripts/k0_step_ratio.py RESULTS.jsonl [RESULTS.jsonl ...]"""
import json, statistics as st, sys, math, collections
for path in sys.argv[1:]:
    med = collections.defaultdict(dict)
    for l in open(path):
        t = json.loads(l)
        if t.get('type') != 'trial' or t['scenario'] != 'B16-ctx512': continue
        k0 = [ms for ms, pf, ks, acc, *_ in t['extra']['steps'] if not pf and ks and max(ks) == 0 and len(ks) == 16]
        if k0: med[t["arm"]][t["replicate"]] = st.median(k0)
    for a in med:
        if a == 'no-spec' or not a.startswith('adaptive'): continue
        logs = [math.log(med[a][r] / med['no-spec'][r]) for r in med[a] if r in med['no-spec']]
        m = sum(logs)/len(logs); sd = st.stdev(logs)
        print(path.split('/')[-2][:40], a, f"median K0 step ratio vs no-spec {math.exp(m):.4f} ± {1.96*sd/math.sqrt(len(logs)):.4f} (n={len(logs)}) per-rep {[round(math.exp(x),3) for x in logs]}")
