"""`--additional-config` parsing, `--to vllm` flags and the version gate (no vLLM needed)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from specsched.cli import main
from specsched.errors import ScheduleError, UserError
from specsched.integrations.vllm import (
    SCHEDULER_CLS,
    VllmIntegrationConfig,
    config_from_additional,
    config_from_obj,
    serve_flags,
)
from specsched.integrations.vllm.flags import render_flags
from specsched.integrations.vllm.metrics import exposure
from specsched.integrations.vllm.runner import runner_problem
from specsched.integrations.vllm.table import dense_from_entries, missing_from_lookup
from specsched.integrations.vllm.version import check_vllm_version, parse_version
from specsched.policy.hysteresis import HysteresisConfig
from specsched.policy.route import CtxAgg
from specsched.schedule import INF, parse_schedule

ENTRIES = [[1, 4, 1, 511, 1], [1, 4, 512, INF, 3], [5, 16, 1, 511, 0], [5, 16, 512, INF, 2]]


def test_inline_object() -> None:
    cfg = config_from_additional({"specsched": {"schedule": ENTRIES, "ctx_agg": "max"}})
    assert cfg is not None
    assert cfg.ctx_agg is CtxAgg.MAX and cfg.schedule.k_for(2, 600) == 3
    assert config_from_additional({"other": 1}) is None
    assert config_from_additional(None) is None


def test_file_path_forms(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("schedule:\n" + "".join(f"  - {e}\n" for e in ENTRIES) + "ctx_agg: median\n")
    cfg = config_from_obj(str(f))
    assert cfg.ctx_agg is CtxAgg.MEDIAN and cfg.schedule.arity == 5
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(ENTRIES))
    assert config_from_obj(str(bare)).schedule == cfg.schedule
    assert config_from_obj({"schedule": str(bare), "log_every": 10}).log_every == 10


@pytest.mark.parametrize(
    ("obj", "error", "match"),
    [
        ({"schedule": ENTRIES, "agg": "mean"}, UserError, r"unknown key\(s\) agg; allowed: "),
        ({"ctx_agg": "mean"}, ScheduleError, "has no 'schedule'"),
        ({"schedule": ENTRIES, "ctx_agg": "p90"}, UserError, "ctx_agg must be one of"),
        ({"schedule": ENTRIES, "log_every": -1}, UserError, "log_every must be >= 0"),
        ({"schedule": [[1, 4, 1, 9, 2], [1, 4, 9, 99, 3]]}, ScheduleError, "overlaps"),
        ("/nonexistent/s.json", ScheduleError, "no such file"),
        (42, UserError, "must be an object or a file path"),
    ],
)
def test_one_line_errors(obj: object, error: type, match: str) -> None:
    with pytest.raises(error, match=match) as info:
        config_from_obj(obj)
    assert "\n" not in str(info.value)


def test_round_trip_through_additional_config() -> None:
    cfg = VllmIntegrationConfig(parse_schedule(ENTRIES), CtxAgg.MEDIAN, log_every=5)
    again = config_from_additional(json.loads(json.dumps(cfg.to_additional_config())))
    assert again == cfg


def test_serve_flags_are_complete_and_consistent() -> None:
    s = parse_schedule(ENTRIES)
    flags = dict(serve_flags(s, max_num_seqs=16))
    spec = json.loads(flags["--speculative-config"])
    assert spec["num_speculative_tokens"] == 3
    dense = dense_from_entries(spec["num_speculative_tokens_per_batch_size"], 16, 3)
    assert missing_from_lookup(s, dense) == []
    assert flags["--scheduler-cls"] == SCHEDULER_CLS
    assert flags["--max-num-seqs"] == "16"
    assert config_from_additional(json.loads(flags["--additional-config"])) is not None
    argv = shlex.split(render_flags(list(flags.items())))
    assert argv[0] == "--speculative-config" and json.loads(argv[1]) == spec


def test_export_cli_modes(capsys: pytest.CaptureFixture[str]) -> None:
    two_d = json.dumps(ENTRIES)
    assert (
        main(["export", two_d, "--to", "vllm", "--mode", "specsched", "--max-num-seqs", "16"]) == 0
    )
    argv = shlex.split(capsys.readouterr().out)
    assert argv[argv.index("--scheduler-cls") + 1] == SCHEDULER_CLS
    assert argv[argv.index("--max-num-seqs") + 1] == "16"
    # --mode stock: the batch-only projection alone, for a server without specsched.
    assert main(["export", two_d, "--to", "vllm", "--mode", "stock"]) == 0
    captured = capsys.readouterr()
    argv = shlex.split(captured.out)
    assert argv[0] == "--speculative-config" and len(argv) == 2
    assert json.loads(argv[1])["num_speculative_tokens_per_batch_size"] == [[1, 4, 1], [5, 16, 0]]
    assert "no context axis" in captured.err
    # The default (auto) for a schedule with a context axis is the complete specsched flags.
    assert main(["export", two_d, "--to", "vllm"]) == 0
    assert SCHEDULER_CLS in capsys.readouterr().out
    assert (
        main(["export", two_d, "--to", "vllm", "--mode", "specsched", "--max-num-seqs", "0"]) == 2
    )
    assert capsys.readouterr().err.startswith("error: --max-num-seqs")


@pytest.mark.parametrize("version", ["0.24.0", "0.32.0", "0.32.0+cpu", "0.33.1rc1"])
def test_supported_versions(version: str) -> None:
    assert check_vllm_version(version) == version


@pytest.mark.parametrize("version", ["0.23.1", "0.34.0", "1.0.0"])
def test_unsupported_versions(version: str) -> None:
    with pytest.raises(UserError, match=rf"vLLM {version} is not supported.*>= 0.24") as info:
        check_vllm_version(version)
    assert "\n" not in str(info.value)


def test_parse_version() -> None:
    assert parse_version("0.32.0+cpu") == (0, 32, 0)
    assert parse_version("0.33") == (0, 33, 0)
    with pytest.raises(UserError):
        parse_version("dev")


def test_package_imports_without_vllm() -> None:
    import specsched.integrations.vllm as m

    assert "ContextAwareScheduler" in m.__all__
    with pytest.raises(AttributeError):
        m.NotAThing  # noqa: B018


def test_proposal_keys_in_additional_config() -> None:
    # vLLM <= 0.33 rejects them in --speculative-config; under "specsched" they work verbatim.
    cfg = config_from_additional({"specsched": {"speculative_token_schedule": ENTRIES,
                                                "ctx_agg": "max"}})
    assert cfg is not None and cfg.ctx_agg is CtxAgg.MAX and cfg.schedule == parse_schedule(ENTRIES)
    alias = config_from_obj({"num_speculative_tokens_per_batch_size": ENTRIES})
    assert alias.schedule == cfg.schedule
    with pytest.raises(ScheduleError, match="has schedule and speculative_token_schedule"):
        config_from_obj({"schedule": ENTRIES, "speculative_token_schedule": ENTRIES})


@pytest.mark.parametrize(
    ("value", "want"),
    [(None, None), ({}, HysteresisConfig(1, None)), ({"persist_steps": 3}, HysteresisConfig(3)),
     ({"margin": 0.1}, HysteresisConfig(0, 0.1)),
     ({"persist_steps": 4, "margin": 0.2}, HysteresisConfig(4, 0.2))],
)
def test_hysteresis_config(value: object, want: HysteresisConfig | None) -> None:
    cfg = config_from_obj({"schedule": ENTRIES, "hysteresis": value})
    assert cfg.hysteresis == want
    assert config_from_additional(json.loads(json.dumps(cfg.to_additional_config()))) == cfg


@pytest.mark.parametrize(
    ("value", "match"),
    [({"persist": 3}, r"unknown key\(s\) persist; allowed: margin, persist_steps"),
     ({"persist_steps": -2}, "persist_steps"), ({"margin": -1}, "margin"),
     ({"persist_steps": 0}, "needs a margin"), (3, "expected a mapping")],
)
def test_bad_hysteresis(value: object, match: str) -> None:
    with pytest.raises(UserError, match=match) as info:
        config_from_obj({"schedule": ENTRIES, "hysteresis": value})
    assert str(info.value).startswith("specsched: ")


@pytest.mark.parametrize(
    ("method", "v2", "version", "multi_mtp", "refused"),
    [
        ("ngram", False, "0.32.0", False, None),
        ("draft_model", False, "0.32.0", False, None),
        ("custom_class", False, "0.32.0", False, "built-in method"),
        ("eagle3", True, "0.32.0", False, None),
        ("eagle", True, "0.33.1", False, None),
        ("mtp", True, "0.32.0", False, None),
        ("mtp", True, "0.32.0", True, "multi-module mtp drafter ignores"),
        ("draft_model", True, "0.32.0", False, "'draft_model' drafter ignores"),
        ("ngram", True, "0.33.0", False, "'ngram' drafter ignores"),
        ("dflash", True, "0.32.0", False, "VLLM_USE_V2_MODEL_RUNNER=0"),
        ("eagle3", True, "0.28.0", False, "not known to pass"),
    ],
)
def test_runner_guard(
    method: str, v2: bool, version: str, multi_mtp: bool, refused: str | None
) -> None:
    problem = runner_problem(method, v2, version, multi_module_mtp=multi_mtp)
    if refused is None:
        assert problem is None
    else:
        assert problem is not None and refused in problem and "\n" not in problem


def test_metrics_exposure_line() -> None:
    assert exposure({"PROMETHEUS_MULTIPROC_DIR": "/tmp/p"})[0]
    assert exposure({"VLLM_ENABLE_V1_MULTIPROCESSING": "0"})[0]
    reaches, line = exposure({})
    assert not reaches and "export PROMETHEUS_MULTIPROC_DIR" in line
