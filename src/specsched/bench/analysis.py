"""From a results file to per scenario x arm numbers: summaries, ratio vs baseline with CI, noise
floor (control groups and replicate spread), verdicts, order bias. Rendering lives in `report`.

Failed trials (a `failed` reason, no metrics) never enter a figure; each arm row counts them and a
warning names them. A file holding a measured trial key twice is refused (`allow_duplicates` keeps
the first record of each key, with a warning)."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass
from enum import Enum
from typing import Any

from specsched.bench.canary import canary_warnings
from specsched.bench.results import DuplicateKey, Results, is_failed
from specsched.bench.stats import (
    OrderBias,
    RatioCI,
    Summary,
    Verdict,
    bootstrap_ratio_ci,
    control_floor,
    order_bias,
    replicate_floor,
    summarize,
    verdict,
)
from specsched.errors import UserError


class Metric(str, Enum):
    OUTPUT_TOK_S = "output_tok_s"
    DECODE_TOK_S = "decode_tok_s"
    TTFT_S_MEDIAN = "ttft_s_median"
    ITL_S_MEDIAN = "itl_s_median"
    WALL_S = "wall_s"

    @property
    def higher_is_better(self) -> bool:
        return self in (Metric.OUTPUT_TOK_S, Metric.DECODE_TOK_S)


@dataclass(frozen=True, slots=True)
class ArmRow:
    arm: str
    summary: Summary
    ratio: RatioCI | None  # None for the baseline itself or when it has no data
    verdict: Verdict | None
    same_config_as_baseline: bool
    mean_prompt_tokens: float
    failed: int = 0  # measured trials recorded as failed: excluded from every number above


@dataclass(frozen=True, slots=True)
class ScenarioAnalysis:
    name: str
    rows: tuple[ArmRow, ...]
    control_ratios: tuple[tuple[str, str, float], ...]
    control_floor: float
    replicate_floor: float
    order: OrderBias
    all_controls: bool

    @property
    def floor(self) -> float:
        return max(self.control_floor, self.replicate_floor)


@dataclass(frozen=True, slots=True)
class Analysis:
    experiment: str
    experiment_hash: str
    baseline: str
    metric: Metric
    scenarios: tuple[ScenarioAnalysis, ...]
    warnings: tuple[str, ...]
    values: dict[tuple[str, str], tuple[float, ...]]  # (scenario, arm) -> measured values


def _paired(a: dict[int, float], b: dict[int, float], seed: int, n_boot: int) -> RatioCI:
    common = sorted(set(a) & set(b))
    if len(common) >= 2:
        return bootstrap_ratio_ci([a[r] for r in common], [b[r] for r in common], paired=True,
                                  seed=seed, n_boot=n_boot)
    return bootstrap_ratio_ci(list(a.values()), list(b.values()), paired=False, seed=seed,
                              n_boot=n_boot)


def _lines(d: DuplicateKey) -> str:
    return ", ".join(map(str, d.line_nos))


def duplicate_warnings(results: Results, allow: bool) -> list[str]:
    """UserError for duplicate measured keys unless `allow`; then one warning (first kept)."""
    dups = results.duplicates
    if not dups:
        return []
    first = dups[0]
    more = f" ({len(dups) - 1} more key(s) repeat)" if len(dups) > 1 else ""
    if not allow:
        raise UserError(
            f"trial key {first.key!r} appears on lines {_lines(first)}{more}: two bench runs "
            f"wrote this file; rerun into a fresh --out, or pass --allow-duplicates to keep the "
            f"first record of each key"
        )
    return [f"{len(dups)} measured trial key(s) appear more than once (first: {first.key!r} on "
            f"lines {_lines(first)}); kept the first record of each (--allow-duplicates)"]


def _failure_warning(s: str, counts: dict[str, int], reason: str) -> str:
    per_arm = ", ".join(f"{a}: {n}" for a, n in sorted(counts.items()))
    return (f"scenario {s!r}: {sum(counts.values())} failed trial(s) excluded ({per_arm}); "
            f"first reason: {reason}")


def analyze(results: Results, metric: Metric = Metric.OUTPUT_TOK_S, n_boot: int = 4000,
            seed: int = 0, allow_duplicates: bool = False) -> Analysis:
    """Analyze the measured (non-warm-up, not failed) trials of a results file. Duplicate
    measured keys are a UserError unless `allow_duplicates`."""
    warnings = duplicate_warnings(results, allow_duplicates)
    exp: dict[str, Any] = results.header.get("experiment", {})
    baseline = str(exp.get("baseline", ""))
    arm_names = [str(a["name"]) for a in exp.get("arms", [])]
    dry = {s["name"]: s for s in results.header.get("dry_run", {}).get("scenarios", [])}
    values: dict[str, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    prompt_tokens: dict[tuple[str, str], list[float]] = defaultdict(list)
    trials: dict[str, list[tuple[int, str, float]]] = defaultdict(list)
    failed: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    first_reason: dict[str, str] = {}
    for t in results.trials:
        if t.get("warmup"):
            continue
        if is_failed(t):
            failed[str(t["scenario"])][str(t["arm"])] += 1
            first_reason.setdefault(str(t["scenario"]), str(t["failed"]))
            continue
        m = t.get("metrics") or {}
        v = m.get(metric.value)
        if v is None or not v > 0:
            continue
        s, a = str(t["scenario"]), str(t["arm"])
        values[s][a][int(t["replicate"])] = float(v)
        trials[s].append((int(t["position"]), a, float(v)))
        if m.get("num_requests"):
            prompt_tokens[(s, a)].append(m["num_prompt_tokens"] / m["num_requests"])
    out: list[ScenarioAnalysis] = []
    for si, s_obj in enumerate(exp.get("scenarios", [])):
        s = str(s_obj["name"])
        if s in failed:
            warnings.append(_failure_warning(s, failed[s], first_reason[s]))
        if s not in values:
            warnings.append(f"scenario {s!r}: no measured trials yet" if s not in failed
                            else f"scenario {s!r}: every measured trial so far failed")
            continue
        controls = [tuple(g) for g in dry.get(s, {}).get("controls", [])]
        base_group = next((g for g in controls if baseline in g), (baseline,))
        ctl = []
        for group in controls:
            for x, y in itertools.combinations(group, 2):
                if values[s].get(x) and values[s].get(y):
                    r = _paired(values[s][x], values[s][y], seed + si, n_boot)
                    ctl.append((x, y, r.ratio))
        c_floor = control_floor([r for _, _, r in ctl])
        r_floor = replicate_floor([list(v.values()) for v in values[s].values()])
        floor = max(c_floor, r_floor)
        rows = []
        for a in arm_names:
            arm_vals = values[s].get(a, {})
            ratio = None
            verdict_ = None
            same = a in base_group and a != baseline
            if a != baseline and arm_vals and values[s].get(baseline):
                ratio = _paired(arm_vals, values[s][baseline], seed + si, n_boot)
                verdict_ = (Verdict.WITHIN_NOISE if same
                            else verdict(ratio, floor, metric.higher_is_better))
            pts = prompt_tokens.get((s, a), [])
            rows.append(ArmRow(a, summarize(list(arm_vals.values())), ratio, verdict_, same,
                               sum(pts) / len(pts) if pts else math.nan,
                               failed[s].get(a, 0) if s in failed else 0))
        ts = trials[s]
        bias = order_bias([p for p, _, _ in ts], [a for _, a, _ in ts], [v for _, _, v in ts])
        n_arms = len(arm_names)
        all_ctl = n_arms >= 2 and any(len(g) == n_arms for g in controls)
        if all_ctl:
            warnings.append(f"scenario {s!r}: all arms are one configuration; nothing to compare")
        if math.isfinite(bias.p_value) and bias.p_value < 0.01:
            warnings.append(
                f"scenario {s!r}: run position biases {metric.value} by {bias.slope:+.1%} per "
                f"position (p={bias.p_value:.3g}); balanced order cancels it only over full squares"
            )
        out.append(ScenarioAnalysis(s, tuple(rows), tuple(ctl), c_floor, r_floor, bias, all_ctl))
    warnings.extend(canary_warnings(results, baseline))
    per_arm = {(s, a): tuple(v.values()) for s, arms in values.items() for a, v in arms.items()}
    return Analysis(str(exp.get("name", "")), results.experiment_hash, baseline, metric,
                    tuple(out), tuple(warnings), per_arm)


def analysis_to_json(an: Analysis) -> dict[str, Any]:
    def ci(r: RatioCI | None) -> dict[str, Any] | None:
        return None if r is None else {"ratio": r.ratio, "lo": r.lo, "hi": r.hi, "n": r.n,
                                       "paired": r.paired}

    return {
        "experiment": an.experiment, "experiment_hash": an.experiment_hash,
        "baseline": an.baseline, "metric": an.metric.value, "warnings": list(an.warnings),
        "scenarios": [
            {
                "name": s.name, "floor": s.floor, "control_floor": s.control_floor,
                "replicate_floor": s.replicate_floor, "all_controls": s.all_controls,
                "control_ratios": [list(c) for c in s.control_ratios],
                "order_bias": {"by_position": s.order.by_position, "slope": s.order.slope,
                               "p_value": s.order.p_value},
                "arms": [
                    {"arm": r.arm, "n": r.summary.n, "median": r.summary.median,
                     "spread": r.summary.spread, "vs_baseline": ci(r.ratio),
                     "verdict": None if r.verdict is None else r.verdict.value,
                     "same_config_as_baseline": r.same_config_as_baseline,
                     "mean_prompt_tokens": r.mean_prompt_tokens, "failed": r.failed}
                    for r in s.rows
                ],
            }
            for s in an.scenarios
        ],
    }
