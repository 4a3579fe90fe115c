"""Per replicate and arm at B16 x 512: wall, median K = 0 step, refill prefill steps (ms), drafting steps
(thirty-seventh stop).  .venv/bin/python notes/scripts/wave_refills.py RESULTS.jsonl"""
import json, statistics as st, sys
rows = {}
for l in open(sys.argv[1]):
    t = json.loads(l)
    if t.get('type') != 'trial': continue
    steps = t['extra']['steps']
    k0 = [ms for ms, pf, ks, acc, *_ in steps if not pf and ks and max(ks) == 0 and len(ks) == 16]
    pre = [round(ms) for ms, pf, ks, acc, *_ in steps if pf][1:]  # refill prefills (not the first wave)
    draft = [(''.join(map(str, ks)), round(ms)) for ms, pf, ks, acc, *_ in steps if ks and max(ks) > 0]
    rows[(t['replicate'], t['arm'])] = (t['metrics']['wall_s'], st.median(k0), len(steps), t['position'], pre, draft)
arms = sorted({a for _, a in rows})
for r in sorted({r for r, _ in rows}):
    for a in arms:
        if (r, a) in rows:
            w, m, n, pos, pre, d = rows[(r, a)]
            print(r, f"{a:24s} pos {pos} wall {w:6.2f} medK0 {m:6.1f} steps {n} refill {pre} drafts {d}")
