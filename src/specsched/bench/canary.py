"""Correctness canary: greedy speculative decoding must emit exactly the no-spec tokens.

Backends that can (the engine backend) record `extra.output_hash` (a hash of every request's
output tokens) and `extra.greedy` per trial. Arms whose greedy outputs differ from the baseline's
on the same scenario and replicate (same prompts) are flagged: a speed-up bought with different
tokens is not a speed-up. (Rare near-ties of the top-2 logits can flip under a different reduction
order; a flag means: look, not necessarily a bug.) No torch here.
"""

from __future__ import annotations

from collections import defaultdict

from specsched.bench.results import Results


def output_mismatches(results: Results, baseline: str) -> dict[tuple[str, str], list[int]]:
    """(scenario, arm) -> replicates whose greedy output hash differs from the baseline's."""
    hashes: dict[tuple[str, int], dict[str, str]] = defaultdict(dict)
    for t in results.trials:
        extra = t.get("extra") or {}
        if t.get("warmup") or not extra.get("greedy") or not extra.get("output_hash"):
            continue
        hashes[(str(t["scenario"]), int(t["replicate"]))][str(t["arm"])] = str(extra["output_hash"])
    out: dict[tuple[str, str], list[int]] = defaultdict(list)
    for (scenario, rep), by_arm in sorted(hashes.items()):
        ref = by_arm.get(baseline)
        if ref is None:
            continue
        for arm, h in sorted(by_arm.items()):
            if h != ref:
                out[(scenario, arm)].append(rep)
    return dict(out)


def canary_warnings(results: Results, baseline: str) -> list[str]:
    return [
        f"scenario {s!r}: arm {a!r} produced different greedy output tokens than the baseline "
        f"{baseline!r} in replicate(s) {', '.join(map(str, reps))} (correctness canary)"
        for (s, a), reps in output_mismatches(results, baseline).items()
    ]
