"""Seed a new plan_eval / profile run with another profile's acceptance points, so that
`run_profile` resumes them and measures only the timing points (same grid and engine
metadata required; the acceptance texts are then the source profile's).

    .venv/bin/python notes/scripts/seed_profile_acceptance.py SRC/profile.json OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from specsched.planner import load_profile
from specsched.planner.measure import PROGRESS_SCHEMA, progress_path
from specsched.planner.profile_io import acceptance_to_obj, grid_to_obj, metadata_to_obj


def main() -> int:
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    profile = load_profile(src)
    out.mkdir(parents=True, exist_ok=True)
    side = progress_path(out / "profile.json")
    if side.exists() or (out / "profile.json").exists():
        print(f"{out}: already holds a profile or its progress; not touched")
        return 2
    lines = [{"schema": PROGRESS_SCHEMA, "grid": grid_to_obj(profile.grid),
              "metadata": metadata_to_obj(profile.metadata)}]
    lines += [{"kind": "acceptance", **acceptance_to_obj(a)} for a in profile.acceptance]
    side.write_text("".join(json.dumps(x) + "\n" for x in lines))
    print(f"wrote {side}: {len(profile.acceptance)} acceptance points "
          f"({[a.num_requests for a in profile.acceptance]} texts) from {src}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
