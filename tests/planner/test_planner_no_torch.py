from __future__ import annotations

import subprocess
import sys


def test_planner_imports_no_torch_and_no_matplotlib() -> None:
    code = (
        "import sys, specsched.planner, specsched.planner.plots, specsched.cli.plan, "
        "specsched.cli.profile, specsched.cli.profile_args, specsched.cli.profile_engine; "
        "bad = [m for m in ('torch', 'matplotlib') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
