"""A/A or A/B at B16 x 512 against a base arm: per arm, the paired ratio of median K = 0 steps and of output
tok/s, geometric mean +- a 95 % t half-width (t(0.975, 5) = 2.57: written for 6 replicates), per
replicate too (thirty-seventh stop).  .venv/bin/python notes/scripts/aa_control.py RESULTS.jsonl BASE_ARM"""
import json, statistics as st, sys, math, collections
path, base = sys.argv[1], sys.argv[2]
med = collections.defaultdict(dict); tok = collections.defaultdict(dict)
for l in open(path):
    t = json.loads(l)
    if t.get('type') != 'trial' or t['scenario'] != 'B16-ctx512': continue
    k0 = [ms for ms, pf, ks, acc, *_ in t['extra']['steps'] if not pf and ks and max(ks) == 0 and len(ks) == 16]
    if k0: med[t['arm']][t['replicate']] = st.median(k0)
    tok[t['arm']][t['replicate']] = t['metrics']['output_tok_s']
for a in med:
    if a == base: continue
    for name, d in (('median K0 step', med), ('output tok/s', tok)):
        logs = [math.log(d[a][r] / d[base][r]) for r in d[a] if r in d[base]]
        m = sum(logs)/len(logs); sd = st.stdev(logs)
        print(f"{a} / {base} {name}: {math.exp(m):.4f} ± {2.57*sd/math.sqrt(len(logs)):.4f} (n={len(logs)}) per-rep {[round(math.exp(x),3) for x in logs]}")
