"""Run the verify-attention microbenchmark: shapes x kernels, interleaved timing, fits, verdicts.

The result is a plain JSON-ready dict (see `notes/microbench.md` for the schema in words):
`meta` (machine, torch, geometry, grid), `design` (predictor correlations), `shapes` (contexts and
per-kernel timings) and `kernels` (status, fits, joint fit and verdict per kernel).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import platform
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from specsched.engine.engine import cpu_threads
from specsched.errors import UserError
from specsched.microbench.fit import Verdict, VerdictRule, decide
from specsched.microbench.geometry import AttentionGeometry
from specsched.microbench.kernels import (
    KernelKind,
    StepFn,
    allocate_store,
    build_step,
    unavailable_reason,
)
from specsched.microbench.shapes import ShapeGrid, design_correlations, generate_shapes, predictors
from specsched.microbench.timing import TimingStats, time_interleaved

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


@dataclass(frozen=True, slots=True)
class MicrobenchConfig:
    geometry: AttentionGeometry
    grid: ShapeGrid = field(default_factory=ShapeGrid)
    num_spec_tokens: int = 4  # K; the verify step has q = K + 1 queries per sequence
    kernels: tuple[KernelKind, ...] = (KernelKind.ENGINE, KernelKind.PADDED)
    warmup: int = 2
    repeats: int = 10
    dtype: str = "float32"
    device: str = "cpu"
    max_cache_mib: int = 2048
    seed: int = 0
    threads: int | None = 1  # intra-op CPU threads; None keeps torch's default
    rule: VerdictRule = field(default_factory=VerdictRule)

    def __post_init__(self) -> None:
        if self.num_spec_tokens < 0:
            raise UserError(f"num spec tokens must be >= 0, got {self.num_spec_tokens}")
        if self.repeats < 3 or self.warmup < 0:
            raise UserError(f"need repeats >= 3 and warmup >= 0, got {self.repeats}, {self.warmup}")
        if self.dtype not in DTYPES:
            raise UserError(f"unknown dtype {self.dtype!r}; use one of {', '.join(DTYPES)}")
        if not self.kernels:
            raise UserError("no kernels selected")
        if self.threads is not None and self.threads < 1:
            raise UserError(f"threads must be >= 1, got {self.threads}")
        if self.max_cache_mib < 1:
            raise UserError(f"max cache MiB must be >= 1, got {self.max_cache_mib}")

    @property
    def query_len(self) -> int:
        return self.num_spec_tokens + 1


Progress = Callable[[str], None]


def _stats_json(s: TimingStats) -> dict[str, Any]:
    return {
        "median_ms": s.median_ms,
        "q1_ms": s.q1_ms,
        "q3_ms": s.q3_ms,
        "min_ms": s.min_ms,
        "iqr_rel": s.iqr_rel,
        "samples_ms": list(s.samples_ms),
    }


def verdict_json(v: Verdict) -> dict[str, Any]:
    return {
        "aggregator": v.aggregator.value,
        "best": v.best.value,
        "runner_up": v.runner_up.value,
        "rmse_ratio": v.rmse_ratio if np.isfinite(v.rmse_ratio) else None,
        "bootstrap_win": v.bootstrap_win,
        "reason": v.reason,
        "fits": [{**dataclasses.asdict(f), "predictor": f.predictor.value} for f in v.fits],
        "joint": dataclasses.asdict(v.joint),
    }


def _meta(cfg: MicrobenchConfig, device: torch.device, num_distinct: int) -> dict[str, Any]:
    return {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "threads": torch.get_num_threads(),
        "geometry": dataclasses.asdict(cfg.geometry),
        "grid": dataclasses.asdict(cfg.grid),
        "num_spec_tokens": cfg.num_spec_tokens,
        "query_len": cfg.query_len,
        "dtype": cfg.dtype,
        "warmup": cfg.warmup,
        "repeats": cfg.repeats,
        "distinct_layer_caches": num_distinct,
        "rule": dataclasses.asdict(cfg.rule),
    }


def run_microbench(cfg: MicrobenchConfig, progress: Progress | None = None) -> dict[str, Any]:
    """Time every kernel on every shape (interleaved), fit, and decide per kernel.

    On CPU, `cfg.threads` intra-op threads are used for the run (default 1: on a shared machine,
    OpenMP threads spinning against other processes made a step 5-10x slower and noisier).
    """
    with cpu_threads(cfg.threads):
        return _run(cfg, progress)


def _run(cfg: MicrobenchConfig, progress: Progress | None) -> dict[str, Any]:
    say = progress or (lambda _msg: None)
    device = torch.device(cfg.device)
    dtype = DTYPES[cfg.dtype]
    shapes = generate_shapes(cfg.grid)
    q = cfg.query_len
    skipped: dict[KernelKind, str] = {}
    for kind in cfg.kernels:
        reason = unavailable_reason(kind, device, dtype)
        if reason:
            skipped[kind] = reason
    runnable = [k for k in cfg.kernels if k not in skipped]
    max_len = max(s.max_ctx for s in shapes) + q
    capacity = max(s.total_ctx for s in shapes) + cfg.grid.batch_size * q
    store = allocate_store(
        cfg.geometry, cfg.grid.batch_size, max_len, capacity, tuple(runnable),
        cfg.max_cache_mib * 2**20, dtype, device, cfg.seed,
    )
    say(f"{len(shapes)} shapes x {len(runnable)} kernels, {store.num_distinct} layer caches")
    steps: dict[KernelKind, list[StepFn]] = {}
    for kind in runnable:
        try:
            built = [build_step(kind, s, cfg.geometry, q, store) for s in shapes]
            built[0]()  # probe: fail here, not in the middle of the timing loop
            steps[kind] = built
        except Exception as exc:  # a kernel that cannot run here is recorded, not fatal
            skipped[kind] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    cases: list[StepFn] = [fn for kind in steps for fn in steps[kind]]
    stats = time_interleaved(
        cases, warmup=cfg.warmup, repeats=cfg.repeats, device=device, seed=cfg.seed,
        progress=lambda r, n: say(f"repeat {r}/{n}"),
    ) if cases else []
    by_kernel: dict[KernelKind, list[TimingStats]] = {}
    for i, kind in enumerate(steps):
        by_kernel[kind] = stats[i * len(shapes) : (i + 1) * len(shapes)]
    x = predictors(shapes)
    kernels_out: dict[str, Any] = {}
    for kind in cfg.kernels:
        if kind in skipped:
            kernels_out[kind.value] = {"status": "skipped", "reason": skipped[kind]}
            continue
        medians = np.array([s.median_ms for s in by_kernel[kind]])
        verdict = decide(x, medians, cfg.rule)
        kernels_out[kind.value] = {
            "status": "ok",
            "median_iqr_rel": float(np.median([s.iqr_rel for s in by_kernel[kind]])),
            "verdict": verdict_json(verdict),
        }
    return {
        "meta": _meta(cfg, device, store.num_distinct),
        "design": {"correlations": design_correlations(shapes)},
        "shapes": [
            {
                "name": s.name,
                "family": s.family,
                "group": s.group,
                "contexts": list(s.contexts),
                "total_ctx": s.total_ctx,
                "max_ctx": s.max_ctx,
                "median_ctx": s.median_ctx,
                "batch_max": s.batch_max,
                "batch_median": s.batch_median,
                "timings": {k.value: _stats_json(by_kernel[k][j]) for k in by_kernel},
            }
            for j, s in enumerate(shapes)
        ],
        "kernels": kernels_out,
    }
