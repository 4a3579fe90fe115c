"""Verify-step attention microbenchmark: does attention time follow Σctx, B·max or B·median?

- `shapes`: batch-shape design (pure): same-Σctx and same-max families.
- `fit`: least-squares fits and the verdict (pure numpy): mean / max / median / inconclusive.
- `geometry`: layers and heads from a planner preset or a config.json (no torch).
- `kernels`, `timing`, `runner` (torch): kernels over real caches, interleaved timing, the run.
- `report`: JSON, PNG (matplotlib, imported lazily), rich table.

`shapes`, `fit` and `geometry` import no torch, so the verdict logic is testable anywhere.
"""

from __future__ import annotations
