"""`specsched demo` (issue 6): tune the reference engine, plan 2-D and batch-only schedules, then
measure no-spec vs best static K vs batch-only vs 2-D in a balanced experiment with a report.

- `config`: what the demo runs (grid, scenarios, replicates; the default and `--quick`).
- `experiment`: the experiment file built from the plans.
- `pipeline`: the steps, resumable, in one output folder.
- `verdict`: predicted vs measured, and the claims the noise floor allows.
"""

from __future__ import annotations
