"""How much a request's first-position acceptance says about its deeper positions (thirty-fourth
stop): over every profile.json under benchmarks/results, per context point, the per-request
rates (`acceptance[].requests`, [num_requests, max_k]) regressed across requests, deeper
conditional rate a_j (j = 1, 2) on a_0, within each point (its own mean removed), in
probability space. The slope is attenuated by the binomial noise of each request's a_0 (about a
dozen verifies each): divided by a_0's reliability (its between-request variance over its total
variance) it is the slope the policy's shrunk a_0 should carry to its untested positions
(`acceptance_stats.TILT`). Also prints mean deep rates by bins of a_0 (all points pooled).
  python3 notes/scripts/acceptance_tilt.py [ROOT]"""
import glob
import json
import sys

import numpy as np

root = sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results"
rows, slopes = [], []
for f in sorted(glob.glob(f"{root}/**/profile.json", recursive=True)):
    try:
        with open(f) as fh:
            profile = json.load(fh)
    except (OSError, ValueError):
        continue
    for point in profile.get("acceptance", []):
        r = np.array(point.get("requests") or [])
        if r.ndim != 2 or r.shape[1] < 3 or len(r) < 8:
            continue
        n = point["n"] / point["num_requests"]  # verifies per request
        a0 = r[:, 0]
        var = a0.var()
        if var <= 0:
            continue
        reliability = max(0.05, (var - (a0 * (1 - a0)).mean() / n) / var)
        x = a0 - a0.mean()
        for j in (1, 2):
            y = r[:, j] - r[:, j].mean()
            slopes.append((j, float((x * y).sum() / (x * x).sum()), reliability))
        rows.extend((row[0], row[1], row[2], point["a"][1], point["a"][2]) for row in r)
s = np.array(slopes)
print(f"{len(rows)} request rows, {len(s) // 2} context points")
for j in (1, 2):
    sj = s[s[:, 0] == j]
    print(f"a_{j} on a_0: slope median {np.median(sj[:, 1]):.2f}, over reliability "
          f"{np.median(sj[:, 1] / sj[:, 2]):.2f} (reliability median {np.median(sj[:, 2]):.2f})")
a = np.array(rows)
for lo, hi in ((0, 0.6), (0.6, 0.8), (0.8, 0.9), (0.9, 0.99), (0.99, 1.01)):
    m = (a[:, 0] >= lo) & (a[:, 0] < hi)
    if m.any():
        print(f"a_0 in [{lo}, {hi}): {m.sum():5d} requests, a_0 {a[m, 0].mean():.2f}, "
              f"a_1 {a[m, 1].mean():.2f} (point {a[m, 3].mean():.2f}), "
              f"a_2 {a[m, 2].mean():.2f} (point {a[m, 4].mean():.2f})")
