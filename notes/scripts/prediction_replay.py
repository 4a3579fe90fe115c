"""The demo's model check on finished demo folders (forty-eighth stop): each arm's speedup
predicted before the run (verdict.json), predicted again with the run's own acceptance
(`demo.replay.replayed`, the cost model and simulation alone), and measured.
Older step logs (no places column) are read by the admission replay of `bench.step_rows`.
  .venv/bin/python notes/scripts/prediction_replay.py DEMO_DIR...
"""
import json, statistics, sys, time
from pathlib import Path
from specsched.bench.load import experiment_from_obj
from specsched.demo.predict import predicted
from specsched.demo.replay import replayed
from specsched.planner import load_profile
pooled = {'pred': [], 'replay': []}
for arg in sys.argv[1:]:
    d=Path(arg)
    rows=[json.loads(l) for l in (d/"results.jsonl").read_text().splitlines()]
    header=rows[0]["experiment"]
    for arm in header["arms"]:
        if arm.get("adaptive"):
            arm["adaptive"]={k:v for k,v in arm["adaptive"].items() if k not in("acceptance_prior","cost_prior")}
            arm["adaptive"]["profile"]="profile.json"
    exp=experiment_from_obj(header,d)
    prof=load_profile(d/"profile.json")
    v=json.loads((d/"verdict.json").read_text())["rows"]
    t=time.time()
    rep=replayed(exp,prof,rows,"no-spec",False)
    print(d.name, f"{time.time()-t:.1f}s")
    errs = {'pred': [], 'replay': []}
    for r in v:
        if r['verdict']=='baseline' or r['ratio'] is None: continue
        e=rep.get((r['scenario'],r['arm']))
        pe = r['predicted_speedup']/r['ratio']-1
        re = None if e is None else e.mean/r['ratio']-1
        errs['pred'].append(abs(pe))
        if re is not None:
            errs['replay'].append(abs(re))
        print(f"  {r['scenario']:18s} {r['arm']:11s} meas {r['ratio']:.3f} pred {r['predicted_speedup']:.3f} ({100*pe:+.1f}%) replay {'-' if e is None else f'{e.mean:.3f} ({100*re:+.1f}%)'}")
    for key, e in errs.items():
        pooled[key] += e
        if e:
            print(f"  {key:6s}: mean |err| {100 * statistics.fmean(e):.1f}%, max {100 * max(e):.1f}%, "
                  f"within 7%: {sum(x <= 0.07 for x in e)} of {len(e)}")
if len(sys.argv) > 2:
    for key, e in pooled.items():
        print(f"pooled {key:6s}: mean |err| {100 * statistics.fmean(e):.1f}%, max {100 * max(e):.1f}%, "
              f"within 7%: {sum(x <= 0.07 for x in e)} of {len(e)}")
