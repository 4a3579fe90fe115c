"""Measure on the reference engine and plan from it (issue 5: `specsched profile --engine`,
`specsched tune`). Uses torch through `specsched.engine`; the planner math stays torch-free
(`specsched.planner` never imports this package).

- `driver`: step-by-step engine runs (per-step timing split, concurrency, early stop).
- `prompts`: exact-token prompts from offline real text (pydoc_data).
- `engine_profile`: the `measure` callback of `planner.run_profile` (T_draft, T_verify, no-spec
  step, acceptance per position and context).
- `pipeline`: profile + plan (2-D and batch-only) + files, the `tune` command's library part.
"""

from __future__ import annotations
