from __future__ import annotations

from types import ModuleType

import pytest
from bench_helpers import load_stub


@pytest.fixture
def stub_module() -> ModuleType:
    return load_stub()
