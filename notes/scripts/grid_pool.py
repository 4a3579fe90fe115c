"""Pool two runs of adaptive_grid_prefix.yaml (same experiment hash): per cell, each arm's geometric-mean
ratio to no-spec paired by (run, replicate). A diagnostic script (2026-12-01); paths as used then."""
import json, math, collections
def load(p):
    d = collections.defaultdict(dict)
    for line in open(p):
        r = json.loads(line)
        if r.get('type') != 'trial' or r.get('failed') or r.get('warmup'): continue
        d[(r['scenario'], r['arm'])][r['replicate']] = r['metrics']['output_tok_s'] if 'metrics' in r else r['output_tok_s']
    return d
runs = [load('benchmarks/results/adaptive_grid_prefix_2026-12-01-box/grid.jsonl'),
        load('benchmarks/results/adaptive_grid_prefix_2026-12-01-trust/grid.jsonl')]
for scen in ("B1-ctx512","B1-ctx4096","B4-ctx512","B4-ctx4096","B16-ctx512","B16-ctx4096"):
    out = {}
    for arm in ("static-K1","static-K2","static-K3","adaptive"):
        logs = []
        for d in runs:
            base = d[(scen,"no-spec")]
            for rep, v in d[(scen,arm)].items():
                logs.append(math.log(v / base[rep]))
        out[arm] = math.exp(sum(logs)/len(logs))
    best = max(out[a] for a in ("static-K1","static-K2","static-K3"))
    print(scen, {a: round(v,3) for a,v in out.items()}, "ad/best", round(out["adaptive"]/best,3))
