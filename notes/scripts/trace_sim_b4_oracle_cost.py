"""The B = 4 trace simulator with the adaptive arm given an oracle cost prior (forty-second stop): the
policy's own features fitted to the demo's recorded steps, no shape; per variant (AdaptiveConfig
field=value, per_request_k) adaptive / best static K per replicate and / the pooled best static K.
  PYTHONPATH=notes/scripts .venv/bin/python notes/scripts/trace_sim_b4_oracle_cost.py [variant ...]"""
import trace_sim_b4 as T, collections, numpy as np, math, dataclasses, glob, sys, ast
from specsched.policy import PolicyConfig
from specsched.policy.cost import step_features, fit_step_cost
variants = {'base': {}}
for a in sys.argv[1:]:
    variants[a] = {x.split('=')[0]: ast.literal_eval(x.split('=')[1]) for x in a.split(',')}
logs=collections.defaultdict(list)
for d in T.DEMOS:
    exp, cells, fits = T.load(d)
    pc0 = T.arm_policy(exp,'adaptive')
    prior = pc0.adaptive.cost_prior
    for scen in fits:
        X=[];Y=[]
        for (s,_),cell in cells.items():
            if s!=scen: continue
            for t in cell.trials.values():
                for step,dec,ctx,g,pre in T.rebuild(cell,t['extra']['steps']):
                    X.append(step_features(ctx, step[2], step[1], prior.q_tile)); Y.append(step[0]/1e3)
        m = fit_step_cost(np.array(X), np.array(Y))
        oracle = dataclasses.replace(prior, coef=m.coef, shape=None)
        for (s,rep),cell in cells.items():
            if s!=scen: continue
            coef=fits[scen]
            ks={k: T.play(PolicyConfig.constant(k).build(), cell, coef) for k in range(1,6)}
            best=min(ks.values())
            for k,v in ks.items(): logs[(scen,"K%d"%k,"t")].append(math.log(v))
            for name, over in variants.items():
                over=dict(over); prk=over.pop('per_request_k', pc0.per_request_k)
                pco=dataclasses.replace(pc0, per_request_k=prk, adaptive=dataclasses.replace(pc0.adaptive, cost_prior=oracle, **over))
                kk=[]
                to=T.play(pco.build(), cell, coef, kk)
                logs[(scen,name)].append(math.log(best/to)); logs[(scen,name,"t")].append(math.log(to))
                logs[(scen,name,'steps')].append(len(kk))
for k,v in sorted(logs.items()):
    print(k, f"{math.exp(np.mean(v)):.4f}" if len(k)==2 else f"{np.mean(v):.1f}")
print("vs the pooled best static K (one K per scenario, geometric mean over all demos x replicates):")
for scen in ('short-ctx512-B4','long-ctx4096-B4'):
    kt={k: np.mean(v) for (s,k,*r),v in logs.items() if s==scen and r==['t'] and k.startswith('K')}
    bk=min(kt, key=kt.get)
    print(scen, 'best', bk, ' '.join(f"{n}: {math.exp(kt[bk]-np.mean(v)):.4f}" for (s,n,*r),v in logs.items() if s==scen and r==['t'] and not n.startswith('K')))
