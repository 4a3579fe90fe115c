"""Tokens per decode step by replicate, and by request within it (forty-eighth stop): how far a
demo's few documents spread its acceptance. Step log rows: [ms, prefill, [K], [accepted], ...].
  python3 notes/scripts/tokens_per_step.py RESULTS.jsonl [ARM]   (default arm: every arm)
"""
import collections
import json
import sys

arm = sys.argv[2] if len(sys.argv) > 2 else None
rows = [json.loads(line) for line in open(sys.argv[1])]
per_rep = collections.defaultdict(dict)
per_req = collections.defaultdict(dict)
for r in rows:
    if r.get("type") != "trial" or r.get("warmup") or (arm and r["arm"] != arm):
        continue
    tok = steps = 0
    reqs: list[list[int]] = []
    for _ms, pf, ks, acc, *_ in r["extra"]["steps"]:
        if pf > 0:
            reqs.append([0, 0])
        if ks:
            tok += sum(acc) + len(acc)
            steps += 1
            if len(ks) == 1 and reqs:  # B = 1: the row belongs to the last prefilled request
                reqs[-1][0] += acc[0] + 1
                reqs[-1][1] += 1
    key = (r["scenario"], r["arm"])
    per_rep[key][r["replicate"]] = round(tok / max(steps, 1), 2)
    per_req[key][r["replicate"]] = [round(t / s, 2) for t, s in reqs if s]
for key in sorted(per_rep):
    reps = per_rep[key]
    print(key, "by replicate", [reps[i] for i in sorted(reps)])
    print(" " * len(str(key)), "by request (B = 1)", [per_req[key][i] for i in sorted(reps)])
