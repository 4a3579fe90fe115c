"""
Diagnostic (2026-12-03, fourteenth stop): the demo's profile step alone (its engine sizes, grid,
acceptance settings), written to OUT, to compare its B=1 step ratios with a bare
`specsched profile --engine` and the demo's experiment.
Run: .venv/bin/python notes/scripts/demo_profile_repeat.py OUT.json [--timings-only]
"""
import sys
from pathlib import Path

from specsched.demo.config import DemoConfig
from specsched.demo.pipeline import _LazyLLM, _profile_args
from specsched.tune.profile_run import profile_engine

cfg = DemoConfig()
grid, pcfg = _profile_args(cfg)
lazy = _LazyLLM(cfg)
prof = profile_engine(Path(sys.argv[1]), grid, pcfg, lazy.get, None)
for t in prof.timings:
    if t.batch_size == 1:
        print(t.batch_size, t.ctx, t.k, round(t.t_step_ms.median, 1), round(t.t_step_ms.spread, 1))
