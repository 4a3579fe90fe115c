"""Bad input is one UserError line (CLI: `error: ...`, exit 2), never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specsched.cli import main
from specsched.engine import LLM, SamplingParams
from specsched.engine.loading.registry import load_model
from specsched.errors import UserError


def test_unknown_model_path() -> None:
    with pytest.raises(UserError, match="no such file"):
        load_model("/definitely/not/here")


def test_corrupt_gguf(tmp_path: Path) -> None:
    bad = tmp_path / "m.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 7)
    with pytest.raises(UserError, match="not a readable GGUF"):
        load_model(str(bad))


def test_unsupported_architecture(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["GPT2LMHeadModel"]}))
    with pytest.raises(UserError, match="unsupported architecture"):
        load_model(str(tmp_path))


def test_prompt_longer_than_max_model_len(tiny_llama: tuple[Path, Any]) -> None:
    llm = LLM(str(tiny_llama[0]), max_model_len=32)
    with pytest.raises(UserError, match="max_model_len"):
        llm.generate([list(range(2, 40))], SamplingParams(max_tokens=2))


def test_text_prompt_without_tokenizer(tiny_llama: tuple[Path, Any]) -> None:
    with pytest.raises(UserError, match="tokenizer"):
        LLM(str(tiny_llama[0]), max_model_len=32).generate("hello")


@pytest.mark.parametrize(
    "argv",
    [
        ["generate", "--prompt", "hi", "--model", "/no/such/model"],
        ["generate", "--model", "smollm2-135m"],  # no prompt
        ["generate", "--prompt", "hi", "--max-new-tokens", "0"],
        ["generate", "--prompts-file", "/no/such/file.txt"],
        ["generate", "--prompt", "hi", "--drafter", "bogus", "--k", "2"],
        ["generate", "--prompt", "hi", "--schedule", "[[2, 4, 1]]"],
        ["generate", "--prompt", "hi", "--k", "-1"],
        ["generate", "--prompt", "hi", "--drafter", "model:", "--k", "2"],
        ["generate", "--prompt", "hi", "--window", "0", "--k", "2"],
    ],
)
def test_cli_bad_input_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
