"""`specsched profile --engine` and `specsched tune` on a tiny random model, and the step driver."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specsched.cli import main
from specsched.engine.spec.config import SpeculativeConfig
from specsched.errors import UserError
from specsched.planner import (
    MeasurePoint,
    PointKind,
    ProfileGrid,
    ProfileMetadata,
    ProfileSource,
    Stat,
    TimingPoint,
    load_profile,
    progress_path,
    run_profile,
)
from specsched.schedule import load_schedule

GRID_ARGS = ["--batch-sizes", "1,2", "--contexts", "16,64", "--ks", "0,1,2", "--window", "8",
             "--repeats", "3", "--warmup", "1", "--acceptance-tokens", "12"]


@pytest.fixture(scope="module")
def tiny(sharp_tiny_model: Path) -> Path:
    return sharp_tiny_model


@pytest.fixture(scope="module")
def llm(tiny: Path) -> Any:
    from specsched.engine import LLM

    return LLM(str(tiny), max_num_seqs=4, max_model_len=256, num_threads=1)


def test_profile_engine_writes_complete_versioned_profile(tiny: Path, tmp_path: Path,
                                                          capsys: Any) -> None:
    out = tmp_path / "p.json"
    assert main(["profile", "--engine", "--model", str(tiny), *GRID_ARGS, "--out", str(out)]) == 0
    assert "ready for `specsched plan`" in capsys.readouterr().out
    prof = load_profile(out)
    assert prof.missing_points() == []
    assert not progress_path(out).exists()
    m = prof.metadata
    assert m.source is ProfileSource.ENGINE and m.model == str(tiny) and m.threads == 1
    assert m.drafter.startswith("streaming W=8 sinks=4 draft=") and "torch" in m.library_versions
    assert prof.grid == ProfileGrid((1, 2), (16, 64), (0, 1, 2))
    from specsched.engine import LLM

    engine = LLM(str(tiny), max_num_seqs=1, max_model_len=32, num_threads=1).engine
    assert m.attention_q_tile == engine.attention_q_tile()  # what the engine's attention packs
    for t in prof.timings:
        assert t.t_step_ms.n == 3 * 3 and t.t_step_ms.median > 0  # repeats x default rounds
        if t.k == 0:
            assert t.t_verify_ms is None and t.t_draft_ms is None
        else:  # draft + verify are measured inside the step
            assert t.t_verify_ms is not None and t.t_draft_ms is not None
            assert t.t_draft_ms.median + t.t_verify_ms.median <= t.t_step_ms.median * 1.5
    assert [a.ctx for a in prof.acceptance] == [16, 64]
    assert all(len(a.a) == 2 and a.n > 0 for a in prof.acceptance)
    # an existing profile is not silently redone or mixed
    assert main(["profile", "--engine", "--model", str(tiny), *GRID_ARGS, "--out", str(out)]) == 2
    assert "--resume" in capsys.readouterr().err


def test_engine_profile_interleaves_the_ks_of_a_unit_in_rounds(llm: Any) -> None:
    from specsched.tune.engine_profile import EngineProfileConfig, EngineProfiler

    grid = ProfileGrid((1, 2), (16, 48), (0, 1, 2))
    cfg = EngineProfileConfig(model="tiny", speculative=SpeculativeConfig(window=8), repeats=2,
                              warmup=1, rounds=2, acceptance_tokens=8)
    profiler = EngineProfiler(cfg, grid, llm)
    engine = profiler.llm.engine
    order: list[int] = []
    real = engine.set_speculative

    def recording(spec: Any, policy: Any = None) -> None:
        order.append(0 if spec is None else spec.policy.max_k)
        real(spec, policy)

    engine.set_speculative = recording
    try:
        unit = tuple(MeasurePoint(PointKind.TIMING, 2, 48, k) for k in grid.ks)
        points = profiler(unit)
    finally:
        del engine.set_speculative
    assert order[-6:] == [0, 1, 2, 1, 2, 0]  # round 2 starts one K later (before: the warm-up)
    assert [(p.batch_size, p.ctx, p.k) for p in points] == [(2, 48, 0), (2, 48, 1), (2, 48, 2)]
    assert all(p.t_step_ms.n == 2 * 2 for p in points)  # repeats x rounds, warm-up dropped
    assert points[0].t_draft_ms is None and points[2].t_draft_ms is not None
    with pytest.raises(ValueError, match="one batch size and context"):
        profiler((unit[0], MeasurePoint(PointKind.TIMING, 1, 48, 1)))
    with pytest.raises(UserError, match="--rounds"):
        EngineProfileConfig(rounds=0)


def test_engine_profile_resumes_without_remeasuring(llm: Any, tmp_path: Path) -> None:
    from specsched.tune.engine_profile import EngineProfileConfig, EngineProfiler
    from specsched.tune.profile_run import engine_metadata

    grid = ProfileGrid((1, 2), (16, 48), (0, 2))
    cfg = EngineProfileConfig(model="tiny", speculative=SpeculativeConfig(window=8), repeats=2,
                              warmup=1, acceptance_tokens=8)
    profiler = EngineProfiler(cfg, grid, llm)
    seen: list[MeasurePoint] = []

    def failing(unit: tuple[MeasurePoint, ...]) -> Any:
        if len(seen) >= 4:
            raise KeyboardInterrupt
        seen.extend(unit)
        return profiler(unit)

    out = tmp_path / "p.json"
    meta = engine_metadata(cfg)
    with pytest.raises(KeyboardInterrupt):
        run_profile(out, grid, meta, failing)
    assert progress_path(out).exists() and not out.exists()
    first = list(seen)
    seen.clear()

    def counting(unit: tuple[MeasurePoint, ...]) -> Any:
        seen.extend(unit)
        return profiler(unit)

    prof = run_profile(out, grid, meta, counting)
    assert not set(first) & set(seen)  # nothing measured twice
    assert len(first) + len(seen) == 2 + grid.num_points  # 2 acceptance points + timings
    assert prof.missing_points() == []
    assert any(p.kind is PointKind.ACCEPTANCE for p in first)


def test_tune_writes_schedules_plots_and_summary(tiny: Path, tmp_path: Path,
                                                 capsys: Any) -> None:
    out = tmp_path / "tune"
    assert main(["tune", "--model", str(tiny), *GRID_ARGS, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "predicted goodput vs no-spec" in text and "oracle" in text
    for name in ("profile.json", "k_heatmap_2d.png", "speedup_2d.png", "k_heatmap_batch_only.png"):
        assert (out / name).stat().st_size > 0
    assert load_schedule(str(out / "schedule_batch_only.json")).is_batch_only
    load_schedule(str(out / "schedule_2d.json"))
    summary = json.loads((out / "tune_summary.json").read_text())
    assert [r["arm"] for r in summary["predicted"]] == [
        "no-spec", "best static K", "best batch-only", "2-D plan", "per-cell oracle"]
    oracle = summary["predicted"][-1]
    assert all(r["geomean_speedup"] <= oracle["geomean_speedup"] + 1e-9
               for r in summary["predicted"])
    # rerunning with --resume reuses the finished profile
    assert main(["tune", "--model", str(tiny), *GRID_ARGS, "--out", str(out), "--resume"]) == 0


def test_drive_bounds_concurrency_and_matches_generate(llm: Any) -> None:
    from specsched.engine import SamplingParams
    from specsched.engine.driver import drive

    prompts = [[5 + i, 9, 17 + i, 33, 40 + 2 * i] for i in range(5)]
    params = SamplingParams(max_tokens=6, ignore_eos=True)
    llm.engine.set_speculative(None)
    res = drive(llm.engine, prompts, params, concurrency=2)
    assert max(s.num_running for s in res.steps) == 2
    assert all(s.finished for s in res.seqs) and not llm.engine.has_unfinished()
    expected = [o.token_ids for o in llm.generate(prompts, params)]
    assert [s.output_token_ids for s in res.seqs] == expected
    assert all(len(c) == 6 for c in res.chunk_times)  # K = 0: one token per step
    assert res.stats.num_output_tokens == 30


def test_drive_stop_aborts_and_leaves_engine_usable(llm: Any) -> None:
    from specsched.engine import SamplingParams, SpeculativeConfig
    from specsched.engine.driver import drive
    from specsched.engine.sched.sequence import FinishReason
    from specsched.policy import PolicyConfig

    llm.engine.set_speculative(SpeculativeConfig(window=8, policy=PolicyConfig.constant(2)))
    prompts = [[3, 4, 5, 6, 7, 8, 9, 10] * 3 for _ in range(3)]
    res = drive(llm.engine, prompts, SamplingParams(max_tokens=100, ignore_eos=True),
                stop=lambda r: len(r.steps) >= 3)
    assert res.aborted and len(res.steps) == 3
    assert all(s.finish_reason == FinishReason.ABORT for s in res.seqs)
    assert not llm.engine.has_unfinished()
    decode = [s for s in res.steps if s.all_decoding]
    assert decode and all(s.routed_k == 2 and s.draft_s > 0 for s in decode)
    again = drive(llm.engine, prompts[:1], SamplingParams(max_tokens=4, ignore_eos=True))
    assert len(again.seqs[0].output_token_ids) == 4


def _unit(b: int, c: int, ks: list[int], rel: float) -> list[TimingPoint]:
    """Timing points of one unit whose every K has relative IQR `rel`."""
    return [TimingPoint(b, c, k, Stat(10.0 * (k + 1), rel * 10.0 * (k + 1), 6)) for k in ks]


def test_unit_noise_is_the_median_relative_iqr_over_the_ks() -> None:
    from specsched.planner import unit_noise

    pts = [TimingPoint(1, 16, k, Stat(m, s, 6))
           for k, (m, s) in enumerate([(10.0, 1.0), (20.0, 8.0), (40.0, 2.0)])]
    assert unit_noise(pts) == pytest.approx(0.1)  # 0.05, 0.1, 0.4 -> the middle one
    assert unit_noise(pts[:2]) == pytest.approx(0.25)  # even count: mean of the middle two


def test_a_noisy_unit_is_measured_again_and_the_quietest_attempt_kept(llm: Any) -> None:
    from specsched.tune.engine_profile import EngineProfileConfig, EngineProfiler

    grid = ProfileGrid((1, 2), (16, 48), (0, 1, 2))

    def profiler_with(noise: list[float], **kw: Any) -> tuple[EngineProfiler, list[float]]:
        cfg = EngineProfileConfig(model="tiny", speculative=SpeculativeConfig(window=8), **kw)
        prof = EngineProfiler(cfg, grid, llm)
        left = list(noise)
        prof._attempt = lambda b, c, ks: _unit(b, c, list(ks), left.pop(0))  # type: ignore
        return prof, left

    # noisy, noisier, quiet: three attempts, the quiet one kept
    prof, left = profiler_with([0.30, 0.40, 0.05])
    pts = prof.timings(2, 48, [0, 1, 2])
    assert left == [] and prof.remeasured == 2
    assert [p.t_step_ms.spread / p.t_step_ms.median for p in pts] == pytest.approx([0.05] * 3)
    # a quiet first attempt is not repeated
    prof, left = profiler_with([0.05, 0.01])
    prof.timings(2, 48, [0, 1, 2])
    assert left == [0.01] and prof.remeasured == 0
    # bounded: never more than 1 + remeasure attempts; the quietest of them kept
    prof, left = profiler_with([0.30, 0.20, 0.50, 0.01], remeasure=2)
    pts = prof.timings(2, 48, [0, 1, 2])
    assert left == [0.01] and prof.remeasured == 2
    assert pts[0].t_step_ms.spread / pts[0].t_step_ms.median == pytest.approx(0.20)
    prof, left = profiler_with([0.30, 0.01], remeasure=0)
    prof.timings(2, 48, [0, 1, 2])
    assert left == [0.01]
    with pytest.raises(UserError, match="remeasure"):
        EngineProfileConfig(remeasure=-1)
    with pytest.raises(UserError, match="max_rel_spread"):
        EngineProfileConfig(max_rel_spread=0.0)


def test_cpu_label_names_the_vector_isa_so_other_machines_do_not_resume() -> None:
    from specsched.planner.measure import _same_run
    from specsched.tune.profile_run import cpu_isa, describe_device

    assert cpu_isa("fpu avx2 fma avx512f avx512_bf16 sse") == "avx512_bf16 avx512f avx2 fma"
    assert cpu_isa("fpu sse avx2 fma") == "avx2 fma"
    assert cpu_isa(None) == "" and cpu_isa("fpu sse2") == ""
    label = describe_device("cpu")
    assert label.startswith("cpu: ") and "logical cores" in label
    # two machines of one model name with other vector units are two devices
    base = ProfileMetadata(model="m", drafter="d", dtype="float32",
                           device="cpu: AMD EPYC (2 logical cores; avx2 fma)", threads=1)
    wider = ProfileMetadata(model="m", drafter="d", dtype="float32",
                            device="cpu: AMD EPYC (2 logical cores; avx512_bf16 avx512f avx2 fma)",
                            threads=1)
    assert not _same_run(base, wider) and _same_run(base, base)
