"""Between-request spread (tau) of the first position's acceptance on an adaptive grid's B = 1 static arms,
beyond binomial noise, and the empirical-Bayes weight p(1-p)/tau^2 (thirty-seventh stop).
  .venv/bin/python notes/scripts/b1_tau.py RESULTS.jsonl"""
import json, sys, collections, numpy as np
path = sys.argv[1]
for scen in ('B1-ctx512', 'B1-ctx4096'):
  for arm in ('static-K1', 'static-K2', 'static-K3', 'static-K4'):
    rates, ns = [], []
    for line in open(path):
        t = json.loads(line)
        if t.get('type') != 'trial' or t['scenario'] != scen or t['arm'] != arm: continue
        cur = []
        seqs = []
        for ms, prefill, ks, acc, *_ in t['extra']['steps']:
            if prefill:
                if cur: seqs.append(cur)
                cur = []
            if ks and ks[0] > 0: cur.append(acc[0] > 0)
        if cur: seqs.append(cur)
        for s in seqs:
            rates.append(np.mean(s)); ns.append(len(s))
    r, n = np.array(rates), np.array(ns)
    p = np.average(r, weights=n)
    noise = np.mean(p * (1 - p) / n)
    tau2 = np.var(r) - noise
    print(scen, arm, f"requests {len(r)} p0 {p:.3f} sd(rates) {np.std(r):.3f} noise sd {np.sqrt(noise):.3f} tau {np.sqrt(max(tau2,0)):.3f} weight p(1-p)/tau2 {p*(1-p)/max(tau2,1e-6):.1f}")
