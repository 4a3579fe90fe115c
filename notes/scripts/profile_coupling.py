"""Diagnostic (2026-12-06, fortieth stop): the coupling of deeper acceptance to the first position
in the profiles' own acceptance points (per-request conditional rates a_1..a_K, stored in every
profile): per context, the correlation over requests between a_1 and the mean of a_2..a_K, and
the least-squares slope of logit(deeper) on logit(a_1) (the policy assumes slope 1). Pooled over
the profiles given.

  .venv/bin/python notes/scripts/profile_coupling.py PROFILE.json...
"""
import json
import math
import statistics
import sys
from collections import defaultdict


def logit(p: float) -> float:
    p = min(max(p, 0.02), 0.98)
    return math.log(p / (1 - p))


pairs: dict[int, list[tuple[float, float]]] = defaultdict(list)
for path in sys.argv[1:]:
    with open(path) as fh:
        prof = json.load(fh)
    for point in prof.get("acceptance", []):
        for req in point.get("requests") or []:
            if len(req) >= 2:
                pairs[point["ctx"]].append((req[0], statistics.fmean(req[1:])))
for ctx in sorted(pairs):
    xs, ys = zip(*pairs[ctx])
    lx, ly = [logit(x) for x in xs], [logit(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    sxx = sum((a - mx) ** 2 for a in lx)
    slope = sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sxx if sxx else float("nan")
    corr = statistics.correlation(xs, ys) if len(xs) > 2 else float("nan")
    print(f"ctx {ctx:5}: {len(xs):4} requests, first {statistics.fmean(xs):.2f}, deeper "
          f"{statistics.fmean(ys):.2f}, corr {corr:+.2f}, logit slope {slope:+.2f}")
