"""One writer per results file: an exclusive, non-blocking `flock` on `<results>.lock`.

Two `specsched bench` processes appending to one file would duplicate whole runs (fresh) or lose
one run's trials (`--resume`), so the runner takes this lock *before* it creates or reads the
results file and holds it for the whole run; a second writer is refused at once, never queued.

The lock lives on a side file, not on the results file: a fresh results file appears by an atomic
rename (a new inode), which a lock on the file itself would not survive. The side file stays after
the run (unlinking it would race a writer that has it open); the kernel drops a `flock` when its
process dies, so `kill -9` leaves no stale lock. The holder writes its pid into the side file, for
the refusal message only.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from specsched.errors import UserError


def lock_path(results: Path) -> Path:
    """`results.jsonl` -> `results.jsonl.lock`, in the same folder (of the file a symlink points
    to: two names of one file share one lock)."""
    real = Path(os.path.realpath(results))
    return real.with_name(real.name + ".lock")


def ensure_parent(path: Path) -> None:
    """Create `path`'s folder (and parents); a one-line UserError when that is impossible."""
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = exc.strerror or str(exc)
        if isinstance(exc, (FileExistsError, NotADirectoryError)):
            why += " (a regular file is in the way)"
        msg = f"{path}: cannot create folder {folder}: {why}; pick another --out"
        raise UserError(msg) from None


def _holder(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode(errors="replace").strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


@contextmanager
def results_lock(results: Path) -> Iterator[None]:
    """Hold the writer lock of `results` for the `with` body; UserError if another process has it.

    Locks belong to open file descriptions, so a second `results_lock` on the same file inside one
    process is refused too.
    """
    ensure_parent(results)
    lock = lock_path(results)
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise UserError(
            f"{results}: cannot open its lock file {lock}: {exc.strerror or exc}; "
            f"pick another --out"
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(
                f"{results}: another `specsched bench`{_holder(fd)} is writing this file (it holds "
                f"{lock}); wait for it to finish, or pick another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock
