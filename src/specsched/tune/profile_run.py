"""Run an engine profile end to end: the one orchestration `specsched profile --engine`,
`specsched tune` and `specsched demo` share (metadata, a model loaded only when a point is
actually measured, progress as text, resume through `planner.run_profile`)."""

from __future__ import annotations

import dataclasses
import os
import platform
import time
from collections.abc import Callable, Sequence
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import TYPE_CHECKING

from specsched.planner import (
    AcceptancePoint,
    MeasurePoint,
    PointKind,
    Profile,
    ProfileGrid,
    ProfileMetadata,
    ProfileSource,
    TimingPoint,
    run_profile,
    save_profile,
)
from specsched.tune.engine_profile import SUFFIX_TOKENS, EngineProfileConfig, EngineProfiler

if TYPE_CHECKING:
    from specsched.engine.llm import LLM

ProfileProgress = Callable[[int, int, str], None]  # (points done, total, what was measured)


def describe_point(point: MeasurePoint) -> str:
    if point.kind is PointKind.ACCEPTANCE:
        return f"acceptance ctx {point.ctx}"
    return f"B={point.batch_size} ctx={point.ctx} K={point.k}"


class _DeferredProfiler:
    """The `measure` callback; the model loads at the first point actually measured (a finished
    or resumed profile needs none)."""

    def __init__(self, cfg: EngineProfileConfig, grid: ProfileGrid,
                 get_llm: Callable[[], LLM] | None) -> None:
        self.cfg, self.grid, self.get_llm = cfg, grid, get_llm
        self.profiler: EngineProfiler | None = None

    def __call__(self, unit: Sequence[MeasurePoint]) -> list[TimingPoint | AcceptancePoint]:
        if self.profiler is None:
            llm = None if self.get_llm is None else self.get_llm()
            self.profiler = EngineProfiler(self.cfg, self.grid, llm)
        return self.profiler(unit)


def profile_engine(
    path: Path,
    grid: ProfileGrid,
    cfg: EngineProfileConfig,
    get_llm: Callable[[], LLM] | None = None,
    progress: ProfileProgress | None = None,
) -> Profile:
    """Measure every missing point of `grid` into `path` (resumable). `get_llm`: share an
    engine already loaded elsewhere (the demo); None builds one sized for the grid."""

    def report(done: int, total: int, point: MeasurePoint) -> None:
        if progress is not None:
            progress(done, total, describe_point(point))

    measure = _DeferredProfiler(cfg, grid, get_llm)
    profile = run_profile(path, grid, engine_metadata(cfg), measure, progress=report)
    if measure.profiler is None:  # nothing measured now: the profile says what it said
        return profile
    q_tile = measure.profiler.llm.engine.attention_q_tile()
    if q_tile == profile.metadata.attention_q_tile:
        return profile
    profile = dataclasses.replace(
        profile, metadata=dataclasses.replace(profile.metadata, attention_q_tile=q_tile))
    save_profile(profile, path)
    return profile


def _versions() -> dict[str, str]:
    out: dict[str, str] = {}
    for name in ("specsched", "torch", "numpy", "tokenizers"):
        try:
            out[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            continue
    return out


# The vector extensions that change the engine's step costs (kernel widths, bf16 / int8 paths),
# widest first: machines sold under one model name differ in them (2-core "AMD EPYC" VMs with
# AVX2 only and with AVX-512 + BF16 ran twice as fast as each other).
ISA_FLAGS = ("amx_bf16", "avx512_bf16", "avx512_vnni", "avx512f", "avx2", "fma")


def _cpuinfo_field(name: str) -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.split(":", 1)[0].strip() == name:
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _cpu_name() -> str:
    return _cpuinfo_field("model name") or platform.processor() or platform.machine()


def cpu_isa(flags: str | None) -> str:
    """The ISA_FLAGS present in a /proc/cpuinfo `flags` line, widest first ("" if unknown)."""
    have = set((flags or "").split())
    return " ".join(f for f in ISA_FLAGS if f in have)


def describe_device(device: str) -> str:
    """A stable device label (part of the resume identity: no load figures in it). On CPU it
    names the vector ISA, so a profile is never resumed, or read as this machine's, on a
    machine of the same name with other vector units."""
    if device == "cpu":
        isa = cpu_isa(_cpuinfo_field("flags"))
        return f"cpu: {_cpu_name()} ({os.cpu_count()} logical cores{'; ' + isa if isa else ''})"
    import torch

    return f"{device}: {torch.cuda.get_device_name(torch.device(device))}"


def _acceptance_shape(cfg: EngineProfileConfig) -> str:
    if cfg.acceptance_tail <= 0 or cfg.prompts_file is not None:
        return ""
    tails = f"{cfg.acceptance_tail}-token tails" if cfg.acceptance_tail_range <= 0 else (
        f"tails of {cfg.acceptance_tail} x (1 ± {cfg.acceptance_tail_range:g}) tokens")
    return f" ({cfg.acceptance_documents} documents, {tails})"


def engine_metadata(cfg: EngineProfileConfig, notes: str = "") -> ProfileMetadata:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    text = (
        f"specsched profile --engine: repeats {cfg.repeats}, warm-up {cfg.warmup} steps, "
        f"{cfg.rounds} rounds interleaving the Ks of each batch x context (a unit whose "
        f"median relative IQR exceeds {cfg.max_rel_spread:.0%} measured again, up to "
        f"{cfg.remeasure} times, the quietest kept), "
        f"greedy, prompts sharing a prefix of pydoc_data text + {SUFFIX_TOKENS}-token suffixes; "
        f"acceptance from {cfg.acceptance_prompts} requests x {cfg.acceptance_tokens} tokens "
        f"of {cfg.prompts_file or 'corpus'} text per context{_acceptance_shape(cfg)}; load "
        f"average at start "
        f"{load:.2f}. {notes}"
    ).strip()
    return ProfileMetadata(
        model=cfg.model,
        drafter=cfg.drafter_label,
        dtype=cfg.dtype,
        device=describe_device(cfg.device),
        threads=cfg.threads,
        source=ProfileSource.ENGINE,
        created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        library_versions=_versions(),
        notes=text,
    )


