"""Which batch size the demo's scenarios run at (`choose_batch_size`): the row where the 2-D plan
is predicted to beat the batch-only plan, by at least EDGE_RESOLUTION; else the larger gain."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from specsched.demo.experiment import choose_batch_size
from specsched.planner import Arm


def _plans(edge_b1: float, edge_b4: float, gain_b1: float, gain_b4: float) -> object:
    """Predicted tables over batch (1, 4) x ctx (512, 4096): the 2-D plan's fraction of the
    oracle exceeds the batch-only plan's by `edge_*` at ctx 512; speedups `gain_*`."""
    batch = SimpleNamespace(of_oracle=np.ones((2, 2)) * 0.9, speedup=np.ones((2, 2)))
    plan = SimpleNamespace(of_oracle=np.asarray([[0.9 + 2 * edge_b1, 0.9],
                                                 [0.9 + 2 * edge_b4, 0.9]]),
                           speedup=np.asarray([[gain_b1] * 2, [gain_b4] * 2]))
    table = SimpleNamespace(batch_sizes=(1, 4))
    return SimpleNamespace(plan_2d=SimpleNamespace(
        table=table, arms={Arm.PLAN: plan, Arm.BATCH_ONLY: batch}))


@pytest.mark.parametrize(("edges", "gains", "want"), [
    ((0.0, 0.03), (1.6, 1.5), 4),  # a material edge at B=4 wins over a larger gain at B=1
    ((0.0, 0.0004), (1.6, 1.575), 1),  # an edge the planner cannot resolve is a tie: gain
    ((0.0, 0.0004), (1.5, 1.6), 4),
    ((0.012, 0.018), (1.6, 1.5), 1),  # both edges in the same 1 % step: the gain decides
    ((0.0, 0.0), (1.5, 1.5), 1),  # all equal: the smaller (cheaper) batch
])
def test_batch_choice(edges: tuple[float, float], gains: tuple[float, float], want: int) -> None:
    assert choose_batch_size(_plans(*edges, *gains)) == want  # type: ignore[arg-type]
