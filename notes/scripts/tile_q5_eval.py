"""Diagnostic (2026-12-03, nineteenth stop): re-predict stored demos with the profile's
attention_q_tile as recorded and replaced by 5 (16 free rows // G = 3, cpu_kernels.TILE_ROWS), and
print each arm's signed prediction error (predicted / measured speedup - 1, percent).

  .venv/bin/python notes/scripts/tile_q5_eval.py benchmarks/results/demo/<dir> ...
"""
import statistics, sys, dataclasses
from pathlib import Path
from demo_dir import load_demo
from specsched.demo import predict as demo_predict
for arg in sys.argv[1:]:
    d = Path(arg)
    exp, prof, trials = load_demo(d)
    line = f"{d.name[:40]:40} qt={prof.metadata.attention_q_tile}"
    for qt in (prof.metadata.attention_q_tile, 5):
        p = dataclasses.replace(prof, metadata=dataclasses.replace(prof.metadata, attention_q_tile=qt))
        preds = demo_predict.predicted(exp, p, "no-spec", waves=False)
        errs = []
        for scen in exp.scenarios:
            tp = {a.name: statistics.fmean(t["metrics"]["output_tok_s"] for t in trials if t["scenario"] == scen.name and t["arm"] == a.name) for a in exp.arms}
            for a in exp.arms:
                if a.name != "no-spec":
                    errs.append(preds[(scen.name, a.name)].speedup.mean / (tp[a.name] / tp["no-spec"]) - 1)
        line += f" | q{qt}: mean {100*statistics.fmean(map(abs, errs)):.1f}% max {100*max(map(abs, errs)):.1f}% in7 {sum(abs(e) <= .07 for e in errs)}/{len(errs)} signed " + " ".join(f"{100*e:+.0f}" for e in errs)
    print(line)
