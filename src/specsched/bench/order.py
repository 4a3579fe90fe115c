"""Run order: every arm in every run position equally often (a Williams Latin square), and the
trial plan (warm-ups before each measured trial) that `bench` walks and `--resume` re-walks.

Williams (1949), "Experimental designs balanced for the estimation of residual effects of
treatments": for n arms, n rows (n even) or 2n rows (n odd) in which each arm takes each position
equally often and each arm follows every other arm equally often (first-order carry-over balance).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from specsched.bench.experiment import Experiment


def williams_square(n: int) -> list[list[int]]:
    """Rows of arm indices: n rows for even n, 2n for odd n. Each row is a permutation of 0..n-1."""
    if n < 1:
        raise ValueError("williams_square needs n >= 1")
    # first row 0, 1, n-1, 2, n-2, ...; row r adds r mod n
    first = [0]
    lo, hi = 1, n - 1
    for j in range(1, n):
        if j % 2:
            first.append(lo)
            lo += 1
        else:
            first.append(hi)
            hi -= 1
    rows = [[(x + r) % n for x in first] for r in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    return rows


def arm_orders(arms: Sequence[str], replicates: int, seed: int) -> list[list[str]]:
    """The arm order of each replicate. Arms are relabelled with the seed (so which arm comes first
    is not the file's order); positions are exactly balanced when `replicates` is a multiple of
    len(arms) (and of 2*len(arms) for carry-over balance with an odd count)."""
    labels = list(arms)
    random.Random(f"{seed}/order").shuffle(labels)
    rows = williams_square(len(labels))
    return [[labels[i] for i in rows[r % len(rows)]] for r in range(replicates)]


@dataclass(frozen=True, slots=True)
class PlannedTrial:
    """One trial in run order. `key` identifies it in the results file (for --resume)."""

    seq: int
    scenario: str
    arm: str
    replicate: int
    position: int  # 0-based place of the arm within its replicate block
    warmup_index: int | None  # None: a measured trial
    seed: int  # prompt text and sampling seed: shared by all arms of a replicate

    @property
    def warmup(self) -> bool:
        return self.warmup_index is not None

    @property
    def key(self) -> str:
        tag = "m" if self.warmup_index is None else f"w{self.warmup_index}"
        return f"{self.scenario}|{self.arm}|{self.replicate}|{tag}"


def trial_seed(exp_seed: int, scenario: str, replicate: int, warmup_index: int | None) -> int:
    """Deterministic per-(scenario, replicate) seed; warm-ups get their own text."""
    tag = "m" if warmup_index is None else f"w{warmup_index}"
    return random.Random(f"{exp_seed}/{scenario}/{replicate}/{tag}").randrange(2**31)


def plan_trials(exp: Experiment) -> list[PlannedTrial]:
    """Replicate-major order: for each replicate, each scenario that has that many replicates
    (its own count, else the experiment's), the arms in balanced order, each measured trial
    preceded by `warmup` discarded warm-up trials of the same arm."""
    orders = arm_orders([a.name for a in exp.arms], exp.max_replicates, exp.seed)
    plan: list[PlannedTrial] = []
    for rep, order in enumerate(orders):
        for scenario in exp.scenarios:
            if rep >= exp.replicates_of(scenario):
                continue
            for pos, arm in enumerate(order):
                for w in [*range(exp.warmup), None]:
                    plan.append(PlannedTrial(
                        seq=len(plan), scenario=scenario.name, arm=arm, replicate=rep,
                        position=pos, warmup_index=w,
                        seed=trial_seed(exp.seed, scenario.name, rep, w),
                    ))
    return plan
