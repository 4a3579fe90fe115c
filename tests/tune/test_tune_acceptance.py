"""Acceptance measured per request on the engine (tiny random model): distinct prompts, the
user's own text, per-request rates with spread and CI in the profile point."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specsched.cli import main
from specsched.engine.spec.config import SpeculativeConfig
from specsched.errors import UserError
from specsched.planner import ProfileGrid
from specsched.tune.acceptance_prompts import acceptance_prompts, text_token_ids


def test_acceptance_prompts_are_distinct_exact_windows() -> None:
    corpus = list(range(1000, 3000))
    prompts = acceptance_prompts(corpus, None, 5, 64, seed=0)
    assert len(prompts) == 5 and all(len(p) == 64 for p in prompts)
    assert len({tuple(p) for p in prompts}) == 5
    user = list(range(10, 50))  # 40 tokens: shorter than the context
    mixed = acceptance_prompts(corpus, user, 4, 64, seed=0)
    for p in mixed:
        assert len(p) == 64 and all(t >= 1000 for t in p[:24])  # corpus head
        assert sorted(p[24:]) == user  # the whole user text at the tail, rotated per request
    assert len({tuple(p[24:]) for p in mixed}) > 1
    long_user = list(range(10, 300))
    assert all(t < 1000 for p in acceptance_prompts(corpus, long_user, 3, 64, 0) for t in p)
    assert text_token_ids("a b a", None, 128)[0] == text_token_ids("a", None, 128)[0]


def test_shared_tail_prompts_come_from_the_given_number_of_documents() -> None:
    corpus = list(range(1000, 9000))
    for docs, want in ((1, 1), (4, 4), (3, 3), (16, 8)):  # at most one document per prompt
        prompts = acceptance_prompts(corpus, None, 8, 256, seed=1, shared_tail=32, documents=docs)
        assert len(prompts) == 8 and all(len(p) == 256 for p in prompts)
        heads = [tuple(p[:224]) for p in prompts]
        assert len(set(heads)) == want
        assert all(heads[i] == heads[i + 1] or heads[i + 1] not in heads[:i + 1]
                   for i in range(7))  # prompts of one document are adjacent
        assert len({tuple(p[224:]) for p in prompts}) == 8  # every tail its own


def test_tail_range_gives_serving_shaped_prompts() -> None:
    """tail_range r: tails of tail x (1 ± r) tokens after a shared document of ctx - tail tokens
    (the demo scenarios' shape); the draw is the seed's, and r = 0 keeps exact windows."""
    corpus = list(range(1000, 9000))
    kw: dict[str, Any] = {"shared_tail": 64, "documents": 2}
    prompts = acceptance_prompts(corpus, None, 40, 256, 3, tail_range=0.5, **kw)
    lens = [len(p) for p in prompts]
    assert all(192 + 32 <= n <= 192 + 96 for n in lens) and len(set(lens)) > 5
    assert len({tuple(p[:192]) for p in prompts}) == 2  # the documents, 192 tokens each
    assert prompts == acceptance_prompts(corpus, None, 40, 256, 3, tail_range=0.5, **kw)
    assert prompts != acceptance_prompts(corpus, None, 40, 256, 4, tail_range=0.5, **kw)
    assert all(len(p) == 256 for p in acceptance_prompts(corpus, None, 40, 256, 3, **kw))


def test_tail_range_is_validated() -> None:
    from specsched.tune.engine_profile import EngineProfileConfig

    for bad in (-0.1, 1.0):
        with pytest.raises(UserError, match="acceptance_tail_range"):
            EngineProfileConfig(acceptance_tail=64, acceptance_tail_range=bad)


@pytest.fixture(scope="module")
def llm(sharp_tiny_model: Path) -> Any:
    from specsched.engine import LLM

    return LLM(str(sharp_tiny_model), max_num_seqs=4, max_model_len=256, num_threads=1)


@pytest.mark.parametrize("use_file", [False, True])
def test_engine_acceptance_per_request(llm: Any, tmp_path: Path, use_file: bool) -> None:
    from specsched.tune.engine_profile import EngineProfileConfig, EngineProfiler

    text = tmp_path / "traffic.txt"
    text.write_text(" ".join(f"w{i % 37}" for i in range(400)))
    cfg = EngineProfileConfig(model="tiny", speculative=SpeculativeConfig(window=8), repeats=2,
                              warmup=1, acceptance_tokens=16, acceptance_prompts=6,
                              prompts_file=str(text) if use_file else None)
    profiler = EngineProfiler(cfg, ProfileGrid((1, 2), (32, 96), (0, 2)), llm)
    point = profiler.acceptance(96, 2)
    assert point.ctx == 96 and len(point.a) == 2 and point.n > 0
    assert 2 <= point.num_requests <= 6 and len(point.requests) == point.num_requests
    assert point.spread is not None and point.ci_lo is not None and point.ci_hi is not None
    assert point.ci_lo[0] <= point.a[0] <= point.ci_hi[0]
    assert not llm.engine.has_unfinished()


def test_engine_acceptance_along_the_output(llm: Any) -> None:
    """Every verify of the measurement lands in one `by_output` segment of 32 tokens; each
    request's counts are kept every 16 tokens (`horizons`), the last one its final counts."""
    from specsched.tune.engine_profile import EngineProfileConfig, EngineProfiler

    cfg = EngineProfileConfig(model="tiny", speculative=SpeculativeConfig(window=8), repeats=2,
                              warmup=1, acceptance_tokens=80, acceptance_prompts=4)
    point = EngineProfiler(cfg, ProfileGrid((1, 2), (32, 96), (0, 2)), llm).acceptance(96, 2)
    starts = [g.start for g in point.by_output]
    assert starts[:2] == [0, 32] and starts == sorted(starts) and starts[-1] <= 64
    assert sum(g.verifies for g in point.by_output) == point.n
    assert [h.tokens for h in point.horizons] == [16, 32, 48, 64, 80]
    first, last = point.horizons[0], point.horizons[-1]
    assert len(last.drafted) == 4 and sum(d[0] for d in last.drafted) == point.n
    for early, late in zip(first.drafted, last.drafted, strict=True):
        assert 0 < early[0] < late[0] and len(early) == 2
    assert not llm.engine.has_unfinished()


def test_engine_acceptance_from_shared_documents(llm: Any) -> None:
    """The demo's budget: 6 prompts from 2 documents (3 tails each), each document prefilled
    once before the measurement, then per-request acceptance as usual."""
    from specsched.tune.engine_profile import EngineProfileConfig, EngineProfiler

    cfg = EngineProfileConfig(model="tiny", speculative=SpeculativeConfig(window=8), repeats=2,
                              warmup=1, acceptance_tokens=16, acceptance_prompts=6,
                              acceptance_tail=24, acceptance_documents=2)
    profiler = EngineProfiler(cfg, ProfileGrid((1, 2), (32, 96), (0, 2)), llm)
    prompts = profiler._acceptance_prompts(96)
    assert len({tuple(p[:72]) for p in prompts}) == 2
    point = profiler.acceptance(96, 2)
    assert point.ctx == 96 and 2 <= point.num_requests <= 6 and point.n > 0
    assert not llm.engine.has_unfinished()
    with pytest.raises(UserError, match="acceptance_documents"):
        EngineProfileConfig(acceptance_documents=0)


@pytest.mark.parametrize(("extra", "message"), [
    (["--prompts-file", "/nonexistent/traffic.txt"], "no such file (the prompts file)"),
    (["--acceptance-prompts", "1"], "--acceptance-prompts must be >= 2"),
])
def test_profile_acceptance_args_errors(tmp_path: Path, capsys: Any, extra: list[str],
                                        message: str) -> None:
    rc = main(["profile", "--engine", "--out", str(tmp_path / "p.json"), *extra])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and message in err and "\n" not in err


def test_tune_predicts_a_workload(sharp_tiny_model: Path, tmp_path: Path, capsys: Any) -> None:
    import json

    out = tmp_path / "tune"
    wl = '{"num_requests": 3, "concurrency": 2, "prompt_len": 40, "output_len": 8}'
    args = ["tune", "--model", str(sharp_tiny_model), "--batch-sizes", "1,2", "--contexts",
            "16,64", "--ks", "0,2", "--window", "8", "--repeats", "2", "--warmup", "1",
            "--acceptance-tokens", "8", "--acceptance-prompts", "3", "--out", str(out),
            "--workload", wl, "--seeds", "2"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "fitted step cost over 8 points" in text and "predicted on workload" in text
    pred = json.loads((out / "workload_prediction.json").read_text())
    assert set(pred["arms"]) >= {"no-spec", "batch-only", "plan", "adaptive"}
    summary = json.loads((out / "tune_summary.json").read_text())
    cost = summary["cost_model"]
    # auto: the fit unless its residuals are poor (timings of a tiny model on a loaded machine
    # can be); the choice must follow the reported fit quality either way
    assert cost["kind"] == ("interpolate" if cost["poor_fit"] else "fit")
    rms = cost["rms_rel_residual"]
    assert cost["poor_fit"] == (rms > 0.10) or abs(rms - 0.10) < 1e-3
    assert summary["acceptance"]["quantile"] == 0.1
    assert all(p["num_requests"] >= 2 for p in summary["acceptance"]["per_ctx"])


def test_each_context_draws_its_own_acceptance_texts(llm: Any) -> None:
    """One seed for every context made one set of documents bias every context alike: the
    windows of a shorter context are not the heads of a longer one's."""
    from specsched.tune.engine_profile import EngineProfileConfig, EngineProfiler

    cfg = EngineProfileConfig(model="tiny", speculative=SpeculativeConfig(window=8),
                              acceptance_tokens=16, acceptance_prompts=4)
    profiler = EngineProfiler(cfg, ProfileGrid((1, 2), (32, 96), (0, 2)), llm)
    short, long = profiler._acceptance_prompts(48), profiler._acceptance_prompts(96)
    assert len(short) == len(long) == 4
    assert not {tuple(p) for p in short} & {tuple(p[:48]) for p in long}


def test_acceptance_counts_do_not_depend_on_its_threads(llm: Any) -> None:
    """The acceptance decode runs on every core (never timed); its counts equal one thread's,
    and the engine's own thread count comes back afterwards."""
    import torch

    from specsched.tune.engine_profile import EngineProfileConfig, EngineProfiler

    before = torch.get_num_threads()
    points = []
    for threads in (1, 2):
        cfg = EngineProfileConfig(model="tiny", speculative=SpeculativeConfig(window=8),
                                  acceptance_tokens=16, acceptance_prompts=4,
                                  acceptance_threads=threads)
        profiler = EngineProfiler(cfg, ProfileGrid((1, 2), (32, 96), (0, 2)), llm)
        points.append(profiler.acceptance(96, 2))
        assert torch.get_num_threads() == before
    assert points[0].a == points[1].a and points[0].n == points[1].n
    with pytest.raises(UserError, match="--acceptance-threads"):
        EngineProfileConfig(acceptance_threads=0)
