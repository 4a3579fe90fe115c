"""Measured goodput of full-batch steps per uniform K over K = 0's, per stored AVX-512 demo and
pooled (forty-second stop): tokens / ms over every step with all 4 rows decoding at one K and no
prefill, from the non-adaptive arms (no-spec, static, batch-only, 2-D), with the 2-D arm's K.
  .venv/bin/python notes/scripts/demo_full_batch_k.py"""
import collections
import glob
import json
import math

import numpy as np

for sc in ("short-ctx512-B4", "long-ctx4096-B4"):
    pooled = collections.defaultdict(list)
    for d in sorted(glob.glob("benchmarks/results/demo/2026-12-0[56]-*avx512*")):
        try:
            rows = [json.loads(ln) for ln in open(d + "/results.jsonl")]
        except FileNotFoundError:
            continue
        t = [r for r in rows if r.get("type") == "trial" and not r.get("warmup")
             and not r.get("failed") and r["scenario"] == sc]
        if not t:
            continue
        per = collections.defaultdict(lambda: [0.0, 0.0])  # K -> [ms, tokens]
        for r in t:
            if r["arm"] == "adaptive":
                continue
            for ms, pre, ks, acc, *_ in r["extra"]["steps"]:
                if len(ks) == 4 and not pre and len(set(ks)) == 1:
                    per[ks[0]][0] += ms
                    per[ks[0]][1] += sum(a + 1 for a in acc)
        g = {k: v[1] / v[0] for k, v in per.items()}
        for k in g:
            pooled[k].append(math.log(g[k] / g[0]))
        two_d = collections.Counter(s[2][0] for r in t if r["arm"] == "2-D"
                                    for s in r["extra"]["steps"] if len(s[2]) == 4)
        print(f"{sc} {d.split('/')[-1]} 2-D K{two_d.most_common(1)[0][0]}: "
              + " ".join(f"K{k} {g[k] / g[0]:.2f}" for k in sorted(g)))
    print(f"{sc} pooled: " + " ".join(f"K{k} {math.exp(np.mean(v)):.3f} (n={len(v)})"
                                       for k, v in sorted(pooled.items())))
