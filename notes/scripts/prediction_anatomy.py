"""Where a demo's prediction error comes from (a diagnostic, 2026-12-02; pooled over demos in the
forty-fourth stop): per scenario x arm, predicted vs measured steps per trial, output tokens per
step and seconds per step, from a demo directory's profile.json and results.jsonl (its header
holds the experiment). pred/meas of the speedup factors as (steps ratio) x (seconds-per-step
ratio) relative to no-spec, so a miss splits into an acceptance part (steps) and a cost part
(step time); the cost part splits again into the no-spec step's pred/meas and the arm's.
Predictions are re-made with the current code (`demo.predict.predicted`).

  .venv/bin/python notes/scripts/prediction_anatomy.py DEMO_DIR...
With several directories, also the geometric mean of each factor per scenario x arm (arms by
name; a scenario's B x ctx name is the same in every demo), with its spread over the demos.
"""
import collections
import json
import math
import statistics
import sys
from pathlib import Path

from specsched.bench.load import experiment_from_obj
from specsched.demo.predict import predicted
from specsched.planner import load_profile

COLUMNS = ("speedup", "steps part", "cost part", "no-spec s/step", "arm s/step")


def anatomy(d: Path) -> dict[tuple[str, str], tuple[float, ...]]:
    """(scenario, arm) -> pred/meas of: speedup, its steps part, its cost part, the no-spec step
    time, the arm's step time; printed per row as it goes."""
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
    print(f"{d.name}\n{'scenario':18} {'arm':10} {'steps p/m':>13} {'s/step ms p/m':>15} "
          f"{'speedup p/m':>13} {'steps part':>10} {'cost part':>9}")
    out = {}
    for scen in exp.scenarios:
        meas: dict[str, tuple[float, float, float]] = {}
        for arm in exp.arms:
            ts = [t for t in trials if t["scenario"] == scen.name and t["arm"] == arm.name]
            steps = statistics.fmean(t["extra"]["num_steps"] for t in ts)
            wall = statistics.fmean(t["metrics"]["wall_s"] for t in ts)
            toks = statistics.fmean(t["metrics"]["num_output_tokens"] for t in ts)
            meas[arm.name] = (steps, wall / steps, toks)
        b_pred = preds[(scen.name, "no-spec")]
        b_sps = (b_pred.mean_steps, meas["no-spec"][2] / b_pred.goodput.mean / b_pred.mean_steps)
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
            if arm.name != "no-spec":
                out[(scen.name, arm.name)] = (p.speedup.mean / sp_m, 1 / steps_part,
                                              1 / cost_part, b_sps[1] / meas["no-spec"][1],
                                              p_sps / m_sps)
    return out


def main() -> None:
    pooled = collections.defaultdict(list)
    for d in sys.argv[1:]:
        for key, row in anatomy(Path(d)).items():
            pooled[key].append(row)
    if len(sys.argv) > 2:
        print(f"\npooled over {len(sys.argv) - 1} demos: geometric mean pred/meas "
              "(SD of the logs over demos)")
        print(f"{'scenario':18} {'arm':10} {'n':>3} " + " ".join(f"{c:>16}" for c in COLUMNS))
        for (scen, arm), rows in sorted(pooled.items()):
            cells = []
            for j in range(len(COLUMNS)):
                logs = [math.log(r[j]) for r in rows]
                sd = statistics.stdev(logs) if len(logs) > 1 else 0.0
                cells.append(f"{math.exp(statistics.fmean(logs)):8.3f} ({sd:5.3f})")
            print(f"{scen:18} {arm:10} {len(rows):3} " + " ".join(f"{c:>16}" for c in cells))


if __name__ == "__main__":
    main()
