"""Diagnostic (2026-12-06, fortieth stop): does a request whose first draft position accepts poorly
also accept poorly deeper (given the earlier positions accepted)? The adaptive policy assumes so:
its target for positions >= 2 moves with position 1 on the logit scale (`posterior_batch`'s
shift). From static-K arms of a grid's B = 1 cells (one request at a time; a request ends where
the next prefill starts): per request, the first position's rate r0 and the deeper positions'
conditional rate c = accepted beyond the first / drafted beyond the first given the first
accepted; then their correlation over requests and what the shift model would have predicted.

  .venv/bin/python notes/scripts/depth_coupling.py RESULTS.jsonl [ARM ...]
"""
import json
import math
import statistics
import sys

path, arms = sys.argv[1], set(sys.argv[2:]) or {"static-K3", "static-K4", "static-K5"}
rows = []  # (cell, arm, r0, n0, c, nc)
with open(path) as fh:
    lines = fh.readlines()
for line in lines:
    r = json.loads(line)
    if r.get("type") != "trial" or r.get("warmup") or r["arm"] not in arms:
        continue
    if not r["scenario"].startswith("B1-"):
        continue
    reqs: list[list[tuple[int, int]]] = []
    for step in r["extra"]["steps"]:
        _, prefill, drafted, accepted = step[:4]
        if prefill:
            reqs.append([])
        if drafted and reqs:
            reqs[-1].extend(zip(drafted, accepted))
    for verifies in reqs:
        n0 = len([1 for d, _ in verifies if d > 0])
        a0 = len([1 for d, a in verifies if d > 0 and a > 0])
        deep_d = sum(d - 1 for d, a in verifies if d > 1 and a > 0)  # drafted past the first
        deep_a = sum(a - 1 for d, a in verifies if d > 1 and a > 0)
        if n0 >= 4 and deep_d >= 4:
            rows.append((r["scenario"], r["arm"], a0 / n0, n0, deep_a / deep_d, deep_d))
print(f"{len(rows)} requests")
for cell in sorted({c for c, *_ in rows}):
    sub = [x for x in rows if x[0] == cell]
    r0 = [x[2] for x in sub]
    c = [x[4] for x in sub]
    corr = statistics.correlation(r0, c) if len(sub) > 2 else float("nan")
    print(f"{cell}: {len(sub)} requests, r0 {min(r0):.2f}-{max(r0):.2f} (mean "
          f"{statistics.fmean(r0):.2f}), deeper conditional {min(c):.2f}-{max(c):.2f} (mean "
          f"{statistics.fmean(c):.2f}), corr {corr:+.2f}")
    lo = [x for x in sub if x[2] < statistics.median(r0)]
    hi = [x for x in sub if x[2] >= statistics.median(r0)]
    for name, grp in (("r0 below median", lo), ("r0 at/above", hi)):
        if grp:
            m0 = statistics.fmean(x[2] for x in grp)
            mc = statistics.fmean(x[4] for x in grp)
            print(f"   {name}: r0 {m0:.2f}, deeper {mc:.2f}")
    # the shift model: logit(c) moves by logit(r0) - logit(mean r0)
    m0, mc = statistics.fmean(r0), statistics.fmean(c)
    lg = lambda p: math.log(max(p, 1e-3) / max(1 - p, 1e-3))  # noqa: E731
    errs = []
    for beta in (0.0, 0.25, 0.5, 0.75, 1.0):  # 0: constant, 1: the policy's shift
        pred = [1 / (1 + math.exp(-(lg(mc) + beta * (lg(x) - lg(m0))))) for x in r0]
        errs.append(f"{beta}: {statistics.fmean(abs(p - y) for p, y in zip(pred, c)):.3f}")
    print("   mean abs error of the deeper rate by coupling beta (1 = the policy's shift): "
          + ", ".join(errs))
