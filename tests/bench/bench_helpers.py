"""Helpers shared by the bench tests (imported by name: tests/bench is on sys.path)."""

from __future__ import annotations

import importlib.util
import socket
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from specsched.bench.experiment import Experiment
from specsched.bench.load import experiment_from_obj

HERE = Path(__file__).parent
STUB = HERE / "stub_openai_server.py"


def load_stub() -> ModuleType:
    spec = importlib.util.spec_from_file_location("stub_openai_server", STUB)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("stub_openai_server", module)
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_exp(**over: Any) -> Experiment:
    obj: dict[str, Any] = {
        "name": "t", "backend": "simulated", "replicates": 4, "warmup": 1, "seed": 3,
        "baseline": "a",
        "arms": [{"name": "a", "k": 2}, {"name": "b", "k": 3}],
        "scenarios": [{"name": "s", "kind": "batch", "prompt_lens": [100, 200], "output_len": 16}],
    }
    obj.update(over)
    return experiment_from_obj(obj)
