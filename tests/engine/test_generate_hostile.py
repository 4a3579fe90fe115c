"""`specsched generate` on hostile input (issue 13): non-finite sampling settings, prompts that are
not UTF-8, contexts beyond the model's, KV caches beyond memory, absurd counts. Each is one
`error: ...` line, exit code 2, refused before the KV cache is allocated."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from specsched.cli import main
from specsched.engine.config import EngineConfig, ModelConfig, RopeScaling
from specsched.engine.memory import Available, available_memory, check_engine_fits, kv_cache_bytes
from specsched.errors import UserError

from .test_greedy_golden import write_tiny_model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny_hostile") / "m")  # context 512


@pytest.fixture(scope="module")
def long_context(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model claiming a 2**30-token context: only memory can refuse a long cache."""
    path = write_tiny_model(tmp_path_factory.mktemp("tiny_long") / "m")
    cfg = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**cfg, "max_position_embeddings": 2**30}))
    return path


def _files(tmp: Path) -> dict[str, str]:
    (tmp / "bad.txt").write_bytes(b"fine line\nbad \xff\xfe line\n")
    os.mkfifo(tmp / "fifo.txt")
    return {"bad": str(tmp / "bad.txt"), "fifo": str(tmp / "fifo.txt"), "dir": str(tmp)}


CASES: list[tuple[str, list[str], str]] = [
    ("temperature-nan", ["--temperature", "nan"], "temperature must be a finite number"),
    ("temperature-inf", ["--temperature", "inf"], "temperature must be a finite number"),
    ("temperature-neg-inf", ["--temperature=-inf"], "temperature must be a finite number"),
    ("top-p-nan", ["--top-p", "nan"], "top_p must be in (0, 1]"),
    ("top-p-inf", ["--top-p", "inf"], "top_p must be in (0, 1]"),
    ("top-k-huge", ["--top-k", "9" * 30], "top_k must be in [0, 2147483647]"),
    ("seed-huge", ["--seed", "9" * 30], "seed must be in"),
    ("max-new-tokens-huge", ["--max-new-tokens", "9" * 30], "--max-new-tokens must be in"),
    ("max-new-tokens-over-len", ["--max-new-tokens", "600", "--max-model-len", "512"],
     "--max-new-tokens must be in [1, --max-model-len - 1 = 511]"),
    ("max-num-seqs-huge", ["--max-num-seqs", "10" * 6], "max_num_seqs must be in [1, 65536]"),
    ("max-num-seqs-zero", ["--max-num-seqs", "0"], "max_num_seqs must be in"),
    ("max-model-len-beyond-model", ["--max-model-len", "513"],
     "beyond the model's context of 512 tokens"),
    ("max-model-len-absurd", ["--max-model-len", "10" * 8], "max_model_len must be in [2, "),
    ("prompt-surrogates", ["--prompt", os.fsdecode(b"caf\xe9 \xff")],
     "--prompt 1: not valid UTF-8 text (byte 0xe9 at character 3)"),
    ("prompts-file-invalid-utf8", ["--prompts-file", "{bad}"], "not valid UTF-8 text (byte 14)"),
    ("prompts-file-fifo", ["--prompts-file", "{fifo}"], "not a regular file"),
    ("prompts-file-device", ["--prompts-file", "/dev/zero"], "not a regular file"),
    ("prompts-file-dir", ["--prompts-file", "{dir}"], "is a directory"),
    # refused before the model loads (it used to fail after generating)
    ("freeze-to-static", ["--freeze-to", "{dir}/l.json"], "--freeze-to needs --policy adaptive"),
    ("freeze-to-under-a-file", ["--policy", "adaptive", "--freeze-to", "{bad}/l.json"],
     "is not a folder, so the learned schedule cannot be written"),
    ("freeze-to-a-folder", ["--policy", "adaptive", "--freeze-to", "{dir}"], "is a directory"),
]


def _argv(model: Path, extra: list[str], files: dict[str, str]) -> list[str]:
    return ["generate", "--model", str(model), "--prompt", "hi", "--no-chat-template",
            "--drafter", "none", "--max-new-tokens", "2", "--max-model-len", "512",
            *[a.format(**files) for a in extra]]


@pytest.mark.parametrize(("extra", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_generate_hostile_input(extra: list[str], fragment: str, tiny: Path, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(_argv(tiny, extra, _files(tmp_path)))
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert fragment in lines[0] and "Traceback" not in err, lines[0]


def test_kv_cache_beyond_memory_is_refused_with_the_number(
    long_context: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """2 x 2 layers x 65536 seqs x 2**20 tokens x 2 KV heads x 16 x 4 bytes = 32 TiB."""
    rc = main(_argv(long_context, ["--max-num-seqs", "65536", "--max-model-len", str(2**20)], {}))
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert "the KV cache needs 32768.00 GiB (2 x 2 layers x 65536 seqs x 1048576 tokens" in err
    assert "GiB is available" in err and "lower --max-num-seqs or --max-model-len" in err


def _cap(limit: int) -> Any:
    def preexec() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return preexec


def test_kv_refused_under_an_address_space_cap(long_context: Path) -> None:
    """With RLIMIT_AS at 4 GiB, a 16 GiB cache is refused by the headroom check (not by a
    failed allocation, which would be a traceback) in a subprocess."""
    argv = _argv(long_context, ["--max-num-seqs", "16", "--max-model-len", str(2**21)], {})
    proc = subprocess.run([sys.executable, "-m", "specsched", *argv], capture_output=True,
                          text=True, timeout=120, preexec_fn=_cap(4 << 30), check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert "the KV cache needs 16.00 GiB" in lines[0] and "RLIMIT_AS headroom" in lines[0]


def test_surrogate_prompt_subprocess(tiny: Path) -> None:
    """Undecodable bytes from the shell, as argv bytes."""
    argv = [os.fsencode(a) for a in _argv(tiny, [], {})]
    argv[argv.index(b"hi")] = b"bad \xff"
    proc = subprocess.run([os.fsencode(sys.executable), b"-m", b"specsched", *argv],
                          capture_output=True, timeout=120, check=False)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.count("\n") == 1, err
    assert "--prompt 0: not valid UTF-8 text (byte 0xff at character 4)" in err


def _model(**kw: Any) -> ModelConfig:
    base: dict[str, Any] = dict(vocab_size=128, hidden_size=64, intermediate_size=96,
                                num_layers=2, num_heads=4, num_kv_heads=2, head_dim=16,
                                max_position_embeddings=4096)
    return ModelConfig(**{**base, **kw})


@pytest.mark.parametrize(
    ("scaling", "mpe", "limit"),
    [
        (None, 4096, 4096),
        (RopeScaling("linear", 4.0), 4096, 16384),
        (RopeScaling("llama3", 8.0, original_max_position_embeddings=8192), 131072, 131072),
        (RopeScaling("llama3", 8.0, original_max_position_embeddings=8192), 8192, 65536),
    ],
)
def test_context_limit_with_rope_scaling(scaling: RopeScaling | None, mpe: int,
                                         limit: int) -> None:
    model = _model(rope_scaling=scaling, max_position_embeddings=mpe)
    assert model.max_context == limit
    check_engine_fits(model, EngineConfig(max_model_len=limit), None)
    with pytest.raises(UserError, match=f"beyond the model's context of {limit} tokens"):
        check_engine_fits(model, EngineConfig(max_model_len=limit + 1), None)


def test_kv_bytes_formula_and_memory_bound() -> None:
    model = _model()
    cfg = EngineConfig(max_num_seqs=64, max_model_len=4096, dtype="bfloat16")
    need = kv_cache_bytes(model, 64, 4096, "bfloat16")
    assert need == 2 * 2 * 64 * 4096 * 2 * 16 * 2 == 1 << 26
    check_engine_fits(model, cfg, Available(need, "test"))
    with pytest.raises(UserError, match=r"needs 0\.06 GiB .* but 0\.06 GiB is available \(test\)"):
        check_engine_fits(model, cfg, Available(need - 1, "test"))
    found = available_memory("cpu")
    assert found is not None and found.bytes > 0
