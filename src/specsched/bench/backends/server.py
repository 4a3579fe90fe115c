"""Start, wait for and stop one arm's OpenAI-compatible server (vLLM, SGLang, llama.cpp server).

The server runs in its own process group with output in a log file (by default beside the results
file, see `openai.server_log_dir`); readiness is polled on GET /health, then GET /v1/models, until
one answers 200 or the timeout passes. Loopback only unless the caller allows remote hosts (a
benchmark must not hit a shared server by accident).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from urllib.parse import urlparse

import httpx

from specsched.bench.experiment import ServerSpec
from specsched.errors import UserError

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
READY_PATHS = ("/health", "/v1/models")


def check_loopback(base_url: str, allow_remote: bool) -> None:
    host = urlparse(base_url).hostname or ""
    if not allow_remote and host not in LOOPBACK_HOSTS:
        raise UserError(
            f"server {base_url}: host {host!r} is not loopback; benchmark a local server, or set "
            f"backend_options.allow_remote: true"
        )


def is_ready(base_url: str, timeout_s: float = 2.0) -> bool:
    """True when GET /health or /v1/models answers 200."""
    for path in READY_PATHS:
        try:
            if httpx.get(base_url + path, timeout=timeout_s).status_code == 200:
                return True
        except httpx.HTTPError:
            continue
    return False


def _log_tail(path: Path, lines: int = 5) -> str:
    try:
        tail = path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return ""
    return " | ".join(t.strip() for t in tail if t.strip())


class ManagedServer:
    """One running server process started from an arm's `server.command`."""

    def __init__(self, spec: ServerSpec, log_path: Path) -> None:
        self.spec = spec
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, poll_s: float = 0.5) -> None:
        """Start the command and block until ready; a dead or slow server is a UserError."""
        if is_ready(self.spec.base_url, timeout_s=1.0):
            raise UserError(
                f"{self.spec.base_url} already answers before the arm's server was started; stop "
                f"the other server first (results would measure the wrong configuration)"
            )
        env = {**os.environ, **dict(self.spec.env)}
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            log = open(self.log_path, "ab")  # noqa: SIM115 - closed right below
        except OSError as exc:
            raise UserError(f"server log {self.log_path}: cannot create: "
                            f"{exc.strerror or exc}; set backend_options.log_dir") from None
        with log:
            try:
                self._proc = subprocess.Popen(
                    list(self.spec.command), stdout=log, stderr=subprocess.STDOUT, env=env,
                    start_new_session=True,
                )
            except OSError as exc:
                raise UserError(f"cannot start server {self.spec.command[0]!r}: {exc}") from None
        deadline = time.monotonic() + self.spec.ready_timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                rc = self._proc.returncode
                self._proc = None
                raise UserError(
                    f"server exited with code {rc} before it was ready; log {self.log_path}: "
                    f"{_log_tail(self.log_path)}"
                )
            if is_ready(self.spec.base_url):
                return
            time.sleep(poll_s)
        self.stop()
        raise UserError(
            f"server not ready at {self.spec.base_url} after {self.spec.ready_timeout_s:.0f} s "
            f"(raise server.ready_timeout_s); log {self.log_path}"
        )

    def stop(self, grace_s: float = 30.0) -> None:
        """SIGTERM the process group, SIGKILL after `grace_s`."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        except ProcessLookupError:
            pass
