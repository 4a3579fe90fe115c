"""One writer per results file, and an --out that cannot be created: one line, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import ModuleType

import pytest
from bench_helpers import free_port, make_exp

from specsched.bench.backends.simulated import SimConfig, SimulatedBackend
from specsched.bench.dryrun import dry_run
from specsched.bench.lock import lock_path, results_lock
from specsched.bench.order import plan_trials
from specsched.bench.results import read_results
from specsched.bench.runner import run_experiment
from specsched.cli import main
from specsched.errors import UserError

EXP = {
    "name": "lock", "backend": "simulated", "replicates": 2, "warmup": 1, "seed": 5,
    "arms": [{"name": "a", "k": 1}, {"name": "b", "k": 2}],
    "scenarios": [{"name": "s", "kind": "batch", "prompt_lens": [20, 30], "output_len": 4}],
}
# A second process that holds the writer lock until its stdin closes.
HOLD = (
    "import sys\nfrom pathlib import Path\nfrom specsched.bench.lock import results_lock\n"
    "with results_lock(Path(sys.argv[1])):\n    print('locked', flush=True)\n    sys.stdin.read()\n"
)


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "specsched", "bench", *args],
                          capture_output=True, text=True, timeout=300)


def _one_line_error(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, r.stderr
    assert "Traceback" not in r.stderr
    return r.stderr


def _measured_keys(out: Path) -> list[str]:
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    return sorted(t["key"] for t in lines if t.get("type") == "trial" and not t["warmup"])


def _hold(out: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def _release(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0


def test_second_writer_is_refused_fresh_and_resume(tmp_path: Path) -> None:
    exp_path, out = tmp_path / "e.json", tmp_path / "r.jsonl"
    exp_path.write_text(json.dumps(EXP))
    holder = _hold(out)
    try:
        err = _one_line_error(_bench(str(exp_path), "--out", str(out)))
        assert str(out) in err and "another `specsched bench`" in err
        assert f"pid {holder.pid}" in err
        assert not out.exists()  # refused before the file was created
    finally:
        _release(holder)
    assert main(["bench", str(exp_path), "--out", str(out)]) == 0
    before = out.read_bytes()
    holder = _hold(out)
    try:
        err = _one_line_error(_bench(str(exp_path), "--out", str(out), "--resume"))
        assert "another `specsched bench`" in err
        assert out.read_bytes() == before  # refused before the file was read or appended
    finally:
        _release(holder)
    plan = sorted(p.key for p in plan_trials(make_exp(**EXP)) if not p.warmup)
    assert _measured_keys(out) == plan


def test_two_bench_processes_one_file(tmp_path: Path, stub_module: ModuleType) -> None:
    """A real bench run, held mid-trial by the stub server, refuses a second bench on its file."""
    gate = threading.Event()
    port = free_port()
    server = stub_module.serve(port, gate=gate)
    exp_path, out = tmp_path / "e.json", tmp_path / "r.jsonl"
    exp_path.write_text(json.dumps({
        **EXP, "backend": "openai", "warmup": 0,
        "backend_options": {"base_url": f"http://127.0.0.1:{port}"}}))
    first = subprocess.Popen(
        [sys.executable, "-m", "specsched", "bench", str(exp_path), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not server.RequestHandlerClass.seen:  # the first run is inside its first trial
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        for extra in ((), ("--resume",)):
            err = _one_line_error(_bench(str(exp_path), "--out", str(out), *extra))
            assert "another `specsched bench`" in err and f"pid {first.pid}" in err
    finally:
        gate.set()
        _, first_err = first.communicate(timeout=300)
        server.shutdown()
    assert first.returncode == 0, first_err
    plan = sorted(p.key for p in plan_trials(make_exp(**{**EXP, "warmup": 0})) if not p.warmup)
    assert _measured_keys(out) == plan  # every trial once: nothing duplicated, nothing lost
    assert lock_path(out).exists()


def test_library_run_refuses_while_locked(tmp_path: Path) -> None:
    exp, out = make_exp(replicates=2, warmup=0), tmp_path / "r.jsonl"
    with results_lock(out), pytest.raises(UserError, match="another `specsched bench`"):
        run_experiment(exp, dry_run(exp), SimulatedBackend(SimConfig()), out)
    assert not out.exists()
    run_experiment(exp, dry_run(exp), SimulatedBackend(SimConfig()), out)  # released: runs
    assert read_results(out).duplicates == ()


def test_uncreatable_out_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    exp_path = tmp_path / "e.json"
    exp_path.write_text(json.dumps(EXP))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    err = _one_line_error(_bench(str(exp_path), "--out", str(blocker / "sub" / "r.jsonl")))
    assert "cannot create folder" in err and "regular file is in the way" in err
    err = _one_line_error(_bench(str(exp_path), "--out", str(blocker / "r.jsonl")))
    assert "cannot create folder" in err
    # permission denied (simulated: the tests may run as root, which ignores modes)
    real_mkdir = Path.mkdir

    def denied(self: Path, *args: object, **kwargs: object) -> None:
        if self.name == "locked-dir":
            raise PermissionError(13, "Permission denied", str(self))
        real_mkdir(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "mkdir", denied)
    out = tmp_path / "locked-dir" / "r.jsonl"
    assert main(["bench", str(exp_path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Permission denied" in err
    # report --out under a regular file
    good = tmp_path / "r.jsonl"
    assert main(["bench", str(exp_path), "--out", str(good)]) == 0
    capsys.readouterr()
    assert main(["report", str(good), "--out", str(blocker / "rep"), "--no-charts"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: report folder") and err.count("\n") == 1


def test_a_symlink_to_the_results_shares_its_lock(tmp_path: Path) -> None:
    """Two names of one results file (a symlink as --out) take one lock, not two."""
    out = tmp_path / "r.jsonl"
    out.write_text("")
    alias = tmp_path / "alias.jsonl"
    alias.symlink_to(out)
    assert lock_path(alias) == lock_path(out)
    with (results_lock(out), pytest.raises(UserError, match="another `specsched bench`"),
          results_lock(alias)):
        pass
