"""The planner (issue 5): measurements or a hardware model -> the schedule that maximizes goodput.

Pure Python + numpy; no torch (a test proves it). Pieces, one per module:
- `acceptance`: per-position acceptance -> expected tokens per step; goodput.
- `profile`, `profile_io`: the versioned profile data model and its JSON (atomic writes).
- `interpolate`: the planner's cost model: T from the step cost model fitted to the profile
  (`cost_fit`, residuals reported) or between profiled points (linear in batch, log context);
  acceptance at a lower confidence bound (`acceptance_ci`); never extrapolating silently.
- `workload`, `simulate`, `predict`: a serving workload (waves or closed loop, length
  distributions, per-request acceptance) simulated step by step under each arm's K policy.
- `roofline`, `specs`: MagicDec-style analytic cost model, GPU and model presets, custom specs.
- `compact`, `plan`: per-cell oracle K, compaction into <= N x M ranges, comparison arms.
- `measure`: resumable, engine-agnostic profiling driver. `vllm_import`: vllm bench serve results.
- `plots`: PNG heatmaps (matplotlib imported lazily).
"""

from __future__ import annotations

from specsched.planner.acceptance import (
    conditional_from_prefix_rates,
    constant_acceptance_for_length,
    expected_tokens,
    expected_tokens_constant,
    goodput,
)
from specsched.planner.compact import Compaction, compact
from specsched.planner.cost_fit import CostFit, fit_cost
from specsched.planner.interpolate import CostKind, CostModel, Extrapolation, Lookup
from specsched.planner.measure import (
    MeasurePoint,
    PointKind,
    grid_points,
    grid_units,
    progress_path,
    run_profile,
)
from specsched.planner.plan import (
    Arm,
    ArmResult,
    GoodputTable,
    PlanConfig,
    PlanResult,
    goodput_table,
    make_plan,
    oracle_k_index,
    schedule_from_compaction,
)
from specsched.planner.profile import (
    NOISY_REL_SPREAD,
    SCHEMA_VERSION,
    AcceptancePoint,
    Profile,
    ProfileGrid,
    ProfileMetadata,
    ProfileSource,
    Stat,
    TimingPoint,
    unit_noise,
)
from specsched.planner.profile_io import (
    load_profile,
    profile_from_obj,
    profile_to_obj,
    save_profile,
)
from specsched.planner.roofline import (
    DEFAULT_ACCEPTANCE,
    DraftKind,
    DraftSpec,
    HardwareSpec,
    ModelSpec,
    forward_time_ms,
    roofline_profile,
)
from specsched.planner.specs import (
    builtin_hardware,
    builtin_models,
    resolve_hardware,
    resolve_model,
)
from specsched.planner.vllm_import import import_vllm_bench

__all__ = [
    "DEFAULT_ACCEPTANCE",
    "NOISY_REL_SPREAD",
    "SCHEMA_VERSION",
    "AcceptancePoint",
    "Arm",
    "ArmResult",
    "Compaction",
    "CostFit",
    "CostKind",
    "CostModel",
    "DraftKind",
    "DraftSpec",
    "Extrapolation",
    "GoodputTable",
    "HardwareSpec",
    "Lookup",
    "MeasurePoint",
    "ModelSpec",
    "PlanConfig",
    "PlanResult",
    "PointKind",
    "Profile",
    "ProfileGrid",
    "ProfileMetadata",
    "ProfileSource",
    "Stat",
    "TimingPoint",
    "builtin_hardware",
    "builtin_models",
    "compact",
    "conditional_from_prefix_rates",
    "constant_acceptance_for_length",
    "expected_tokens",
    "expected_tokens_constant",
    "fit_cost",
    "forward_time_ms",
    "goodput",
    "goodput_table",
    "grid_points",
    "grid_units",
    "import_vllm_bench",
    "load_profile",
    "make_plan",
    "oracle_k_index",
    "profile_from_obj",
    "profile_to_obj",
    "progress_path",
    "resolve_hardware",
    "resolve_model",
    "roofline_profile",
    "run_profile",
    "save_profile",
    "schedule_from_compaction",
    "unit_noise",
]
