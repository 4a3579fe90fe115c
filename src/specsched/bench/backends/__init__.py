"""Backends that run bench trials, and the registry that builds one from an experiment.

`openai`: OpenAI-compatible servers; `simulated`: a deterministic toy for tests (not evidence);
`engine`: the in-process reference engine — plugs in as `backends/engine.py` exposing
`EngineBackend.from_options(options)` once `specsched.engine` provides `LLM`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specsched.bench.backends.base import Backend, RequestResult, TrialResult, TrialSpec
from specsched.bench.experiment import BackendKind
from specsched.errors import UserError

__all__ = ["Backend", "RequestResult", "TrialResult", "TrialSpec", "make_backend"]


def make_backend(kind: BackendKind, options: Mapping[str, Any],
                 results: Path | None = None) -> Backend:
    """Build a backend from the experiment's `backend` and `backend_options`. `results`: the
    results file, whose folder receives what the backend writes (server logs) by default."""
    if kind is BackendKind.SIMULATED:
        from specsched.bench.backends.simulated import SimConfig, SimulatedBackend

        return SimulatedBackend(SimConfig.from_options(options))
    if kind is BackendKind.OPENAI:
        from specsched.bench.backends.openai import OpenAIBackend, OpenAIConfig

        return OpenAIBackend(OpenAIConfig.from_options(options, results=results))
    try:
        module = importlib.import_module("specsched.bench.backends.engine")
    except ModuleNotFoundError as exc:
        if exc.name not in ("specsched.bench.backends.engine", "specsched.engine"):
            raise
        raise UserError(
            "the engine backend needs specsched.engine with speculative arms (not wired yet); "
            "use backend: openai"
        ) from None
    backend: Backend = module.EngineBackend.from_options(options)
    return backend
