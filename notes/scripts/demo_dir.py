"""A stored demo directory (profile.json + results.jsonl, its header holding the experiment) as
(experiment, profile, measured trials), for the diagnostic scripts beside this one."""
import json
from pathlib import Path

from specsched.bench.load import experiment_from_obj
from specsched.planner import load_profile


def load_demo(d: Path):
    rows = [json.loads(ln) for ln in (d / "results.jsonl").read_text().splitlines()]
    header = rows[0]["experiment"]
    for arm in header["arms"]:  # the resolved priors -> the profile they came from
        if arm.get("adaptive"):
            arm["adaptive"] = {k: v for k, v in arm["adaptive"].items()
                               if k not in ("acceptance_prior", "cost_prior")}
            arm["adaptive"]["profile"] = "profile.json"
    trials = [r for r in rows if r.get("type") == "trial" and not r.get("warmup")
              and not r.get("failed")]
    return experiment_from_obj(header, d), load_profile(d / "profile.json"), trials
