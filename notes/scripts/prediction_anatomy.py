"""Where a demo's prediction error comes from (a diagnostic, 2026-12-02): per scenario x arm,
predicted vs measured steps per trial, output tokens per step and seconds per step, from a demo
directory's profile.json and results.jsonl (its header holds the experiment). pred/meas of the speedup factors as
(steps ratio) x (seconds-per-step ratio) relative to no-spec, so a miss splits into an
acceptance part (steps) and a cost part (step time).

  .venv/bin/python notes/scripts/prediction_anatomy.py benchmarks/results/demo/<dir>
"""
import json
import statistics
import sys
from pathlib import Path

from specsched.bench.load import experiment_from_obj
from specsched.demo.predict import predicted
from specsched.planner import load_profile

d = Path(sys.argv[1])
rows = [json.loads(ln) for ln in (d / "results.jsonl").read_text().splitlines()]
header = rows[0]["experiment"]  # the header holds the schedules inline
for arm in header["arms"]:  # the resolved priors -> the profile they came from
    if arm.get("adaptive"):
        arm["adaptive"] = {k: v for k, v in arm["adaptive"].items()
                           if k not in ("acceptance_prior", "cost_prior")}
        arm["adaptive"]["profile"] = "profile.json"
exp = experiment_from_obj(header, d)
profile = load_profile(d / "profile.json")
preds = predicted(exp, profile, "no-spec", waves=False)
trials = [r for r in rows if r.get("type") == "trial" and not r.get("warmup")
          and not r.get("failed")]
print(f"{'scenario':18} {'arm':10} {'steps p/m':>13} {'s/step ms p/m':>15} "
      f"{'speedup p/m':>13} {'steps part':>10} {'cost part':>9}")
for scen in exp.scenarios:
    meas: dict[str, tuple[float, float, float]] = {}
    for arm in exp.arms:
        ts = [t for t in trials if t["scenario"] == scen.name and t["arm"] == arm.name]
        steps = statistics.fmean(t["extra"]["num_steps"] for t in ts)
        wall = statistics.fmean(t["metrics"]["wall_s"] for t in ts)
        toks = statistics.fmean(t["metrics"]["num_output_tokens"] for t in ts)
        meas[arm.name] = (steps, wall / steps, toks)
    b_pred = preds[(scen.name, "no-spec")]
    b_sps = b_pred.mean_steps and (b_pred.mean_steps, meas["no-spec"][2] / b_pred.goodput.mean
                                   / b_pred.mean_steps)
    for arm in exp.arms:
        p = preds[(scen.name, arm.name)]
        p_steps = p.mean_steps
        p_sps = meas[arm.name][2] / p.goodput.mean / p_steps
        m_steps, m_sps, _ = meas[arm.name]
        steps_part = (p_steps / b_sps[0]) / (m_steps / meas["no-spec"][0])
        cost_part = (p_sps / b_sps[1]) / (m_sps / meas["no-spec"][1])
        sp_m = (meas["no-spec"][0] * meas["no-spec"][1]) / (m_steps * m_sps)
        print(f"{scen.name:18} {arm.name:10} {p_steps:6.1f}/{m_steps:6.1f} "
              f"{1000 * p_sps:7.1f}/{1000 * m_sps:7.1f} {p.speedup.mean:6.3f}/{sp_m:6.3f} "
              f"{1 / steps_part:10.3f} {1 / cost_part:9.3f}")
