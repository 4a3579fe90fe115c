"""The core imports no torch (a fresh interpreter, so other tests' imports don't interfere)."""

from __future__ import annotations

import subprocess
import sys


def test_core_imports_no_torch() -> None:
    code = (
        "import sys\n"
        "import specsched.schedule, specsched.router, specsched.errors, specsched.cli\n"
        "from specsched.cli import build_parser\n"
        "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))\n"
        "assert not bad, bad\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
