"""Shared by the acceptance re-profiling diagnostics (acceptance_reprofile.py,
acceptance_extra_texts.py): a copy of a plan_eval run folder whose profile carries other
acceptance points, for `benchmarks/plan_eval_predict.py` to re-predict the same cells."""
import json
import shutil
from pathlib import Path

from specsched.planner.profile import AcceptancePoint
from specsched.planner.profile_io import acceptance_to_obj


def write_run_copy(run: Path, out: Path, points: list[AcceptancePoint]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(run / "plan_eval.json", out / "plan_eval.json")
    obj = json.loads((run / "profile.json").read_text())
    obj["acceptance"] = [acceptance_to_obj(p) for p in points]
    (out / "profile.json").write_text(json.dumps(obj, indent=1))
    print(f"wrote {out}")
