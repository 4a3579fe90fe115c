"""Build and load the project's native CPU kernels (`csrc/*.cpp`) at first use.

`g++ -O3 -march=native -fopenmp -shared` (~1 s per library) into a per-user cache keyed by the
source, the compile-time defines, the compiler version and the CPU's feature flags (an
-march=native binary must never run on another CPU). The OpenMP runtime is the one torch
already loaded (same soname), so a kernel shares torch's thread pool. No compiler, an unwritable
cache or `SPECSCHED_NATIVE_KERNELS=0`: `load_library` returns None and the caller keeps its torch
path. Only x86-64 Linux with g++ was built and measured here.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import torch

log = logging.getLogger(__name__)

CSRC = Path(__file__).parent / "csrc"
ENV_SWITCH = "SPECSCHED_NATIVE_KERNELS"


def _cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "specsched" / "kernels"


def _build_key(source: Path, defines: tuple[tuple[str, int], ...], compiler: str) -> str:
    caps = sorted((k, str(v)) for k, v in torch.cpu.get_capabilities().items())
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True,
                             check=False).stdout.splitlines()[:1]
    # every source of csrc/: a kernel may #include another (int8_layer.cpp includes int8_linear)
    sources = [f.read_bytes() for f in sorted(source.parent.glob("*.cpp"))]
    blob = repr((source.name, sources, defines, version, caps)).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _compile(source: Path, defines: tuple[tuple[str, int], ...]) -> Path | None:
    compiler = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        return None
    tag = "".join(f"_{k.lower()}{v}" for k, v in defines)
    out = _cache_dir() / f"{source.stem}{tag}_{_build_key(source, defines, compiler)}.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=out.parent)
    os.close(fd)
    cmd = [compiler, "-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-std=c++17",
           *(f"-D{k}={v}" for k, v in defines), str(source), "-o", tmp]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        os.unlink(tmp)
        log.warning("native kernel %s did not build (%s)", source.name, res.stderr[-500:])
        return None
    os.replace(tmp, out)  # atomic: concurrent builders never load a half-written file
    return out


def load_library(source_name: str, defines: tuple[tuple[str, int], ...] = ()
                 ) -> ctypes.CDLL | None:
    """`csrc/<source_name>` built for this CPU and loaded; None where it cannot be (the caller
    falls back to torch). Callers cache the result (`functools.cache`)."""
    if os.environ.get(ENV_SWITCH, "1") == "0":
        return None
    try:
        path = _compile(CSRC / source_name, defines)
        return None if path is None else ctypes.CDLL(str(path))
    except OSError as err:  # unwritable cache, failed load: torch paths still work
        log.warning("native kernel %s unavailable (%s)", source_name, err)
        return None
