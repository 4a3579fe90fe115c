"""Build one of the project's native kernels for a given `-march` (e.g. haswell = AVX2 only),
so an AVX-512 machine tests the AVX2 paths too."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest


def build_for_march(source: str, march: str, out_dir: Path) -> ctypes.CDLL:
    """`csrc/<source>` compiled with `-march=<march>` into `out_dir`, loaded (skip: no g++)."""
    from specsched.engine.layers.native_build import CSRC

    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("no g++")
    out = out_dir / f"{Path(source).stem}_{march}.so"
    subprocess.run([gxx, "-O3", f"-march={march}", "-fopenmp", "-fPIC", "-shared", "-std=c++17",
                    str(CSRC / source), "-o", str(out)], check=True, capture_output=True)
    return ctypes.CDLL(str(out))
