"""Diagnostic (2026-12-03, nineteenth stop): re-predict stored demos with the profile's
attention_q_tile as recorded and replaced by 5 (16 free rows // G = 3, cpu_kernels.TILE_ROWS), and
print each arm's signed prediction error (predicted / measured speedup - 1, percent).

  .venv/bin/python notes/scripts/tile_q5_eval.py benchmarks/results/demo/<dir> ...
"""
import json, statistics, sys, dataclasses
from pathlib import Path
from specsched.bench.load import experiment_from_obj
from specsched.demo import predict as demo_predict
from specsched.planner import load_profile
for arg in sys.argv[1:]:
    d = Path(arg)
    rows = [json.loads(l) for l in (d / "results.jsonl").read_text().splitlines()]
    header = rows[0]["experiment"]
    for arm in header["arms"]:
        if arm.get("adaptive"):
            arm["adaptive"] = {k: v for k, v in arm["adaptive"].items() if k not in ("acceptance_prior", "cost_prior")}
            arm["adaptive"]["profile"] = "profile.json"
    exp = experiment_from_obj(header, d)
    prof = load_profile(d / "profile.json")
    trials = [r for r in rows if r.get("type") == "trial" and not r.get("warmup") and not r.get("failed")]
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
