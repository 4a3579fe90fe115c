"""The results file: JSONL, a header line then one line per trial, each flushed and fsynced as it
finishes, so `kill -9` loses at most the trial in flight.

A damaged file is never read silently: a final line without its newline or with invalid JSON is a
*corrupt tail* (reported with its line number; dropped only when the caller passes an explicit flag,
and the dropped bytes are kept in a side file); invalid JSON earlier is an error, always.

A measured trial's key appears once in a sound file (one writer at a time: `lock.results_lock`).
A key seen again is a *duplicate* (two writers before the lock existed, or a hand-merged file):
the reader keeps the first record and lists every line holding the key; `analyze` refuses such a
file unless told to keep the first. Warm-up keys may repeat: `--resume` reruns the warm-ups of an
unfinished unit.

A trial record with a non-null `failed` (a reason) is a trial whose measurement could not be trusted
(e.g. a server reply that broke the rules): it has no metrics, counts as done for `--resume`, and
analysis counts it per arm but never uses it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import IO, Any

from specsched.bench.lock import ensure_parent
from specsched.errors import UserError
from specsched.io import MiB, atomic_write_text, read_user_bytes

RESULTS_VERSION = 1
# ~2 KB a trial: a quarter of a million trials; a bigger file is not a results file of this tool
MAX_RESULTS_BYTES = 512 * MiB


class RecordType(str, Enum):
    HEADER = "header"
    TRIAL = "trial"


@dataclass(frozen=True, slots=True)
class CorruptTail:
    line_no: int  # 1-based
    offset: int  # byte offset where the bad line starts (the good prefix ends here)
    reason: str


@dataclass(frozen=True, slots=True)
class DuplicateKey:
    key: str
    line_nos: tuple[int, ...]  # 1-based; every line holding this measured key, the kept one first


@dataclass(frozen=True, slots=True)
class Results:
    header: dict[str, Any]
    trials: list[dict[str, Any]] = field(default_factory=list)  # first record of each measured key
    corrupt_tail: CorruptTail | None = None
    duplicates: tuple[DuplicateKey, ...] = ()

    @property
    def experiment_hash(self) -> str:
        return str(self.header.get("experiment_hash", ""))


def scan_lines(data: bytes) -> tuple[list[dict[str, Any]], CorruptTail | None]:
    """Parse JSONL bytes. Returns the good records and the corrupt tail, if any.
    Raises UserError for invalid JSON before the last line."""
    records: list[dict[str, Any]] = []
    offset = 0
    lines = data.split(b"\n")
    complete, rest = lines[:-1], lines[-1]
    for i, raw in enumerate(complete):
        line_no = i + 1
        try:
            obj = json.loads(raw)
            if not isinstance(obj, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            if i == len(complete) - 1 and not rest:
                return records, CorruptTail(line_no, offset, f"invalid JSON ({exc})")
            raise UserError(
                f"line {line_no} is not valid JSON and is not the last line: the file is damaged; "
                f"repair or remove that line by hand"
            ) from None
        records.append(obj)
        offset += len(raw) + 1
    if rest.strip():
        return records, CorruptTail(len(complete) + 1, offset, "no final newline (cut off)")
    return records, None


def read_results(path: Path, allow_corrupt_tail: bool = False) -> Results:
    """Read a results file. A corrupt tail is a UserError unless `allow_corrupt_tail`."""
    if not path.exists() and not path.is_symlink():
        raise UserError(f"{path}: no such results file")
    data = read_user_bytes(path, "results", MAX_RESULTS_BYTES)
    try:
        records, tail = scan_lines(data)
    except UserError as exc:
        raise UserError(f"{path}: {exc}") from None
    if tail is not None and not allow_corrupt_tail:
        raise UserError(
            f"{path}: line {tail.line_no} is corrupt ({tail.reason}), probably a run killed "
            f"mid-write; pass --truncate-corrupt-tail (bench --resume) or --ignore-corrupt-tail "
            f"(report) to drop it"
        )
    if not records or records[0].get("type") != RecordType.HEADER.value:
        raise UserError(f"{path}: first line is not a specsched bench header")
    header = records[0]
    if header.get("version") != RESULTS_VERSION:
        raise UserError(f"{path}: results version {header.get('version')!r} is not supported")
    trials, duplicates = _dedupe_trials(records)
    return Results(header, trials, tail, duplicates)


def is_failed(trial: dict[str, Any]) -> bool:
    """True for a trial recorded as failed (its `failed` field holds the reason)."""
    return bool(trial.get("failed"))


def _dedupe_trials(records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]],
                                                              tuple[DuplicateKey, ...]]:
    """Trial records (records[i] is line i + 1), keeping the first of each measured key."""
    trials: list[dict[str, Any]] = []
    lines: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        if r.get("type") != RecordType.TRIAL.value:
            continue
        if not r.get("warmup"):
            seen = lines.setdefault(str(r.get("key")), [])
            seen.append(i + 1)
            if len(seen) > 1:
                continue
        trials.append(r)
    dups = tuple(DuplicateKey(k, tuple(v)) for k, v in lines.items() if len(v) > 1)
    return trials, dups


def truncate_corrupt_tail(path: Path, tail: CorruptTail) -> Path:
    """Cut the file at the corrupt line; the dropped bytes go to `<path>.corrupt-line<N>`."""
    with open(path, "r+b") as f:
        f.seek(tail.offset)
        dropped = f.read()
        side = path.with_name(f"{path.name}.corrupt-line{tail.line_no}")
        side.write_bytes(dropped)
        f.truncate(tail.offset)
        f.flush()
        os.fsync(f.fileno())
    return side


def create_results(path: Path, header: dict[str, Any]) -> None:
    """Write a new file holding the header (atomic: temp file + os.replace); never overwrites."""
    if path.exists():
        raise UserError(f"{path}: already exists; continue it with --resume or pick another --out")
    ensure_parent(path)
    line = json.dumps({"type": RecordType.HEADER.value, "version": RESULTS_VERSION, **header})
    try:
        atomic_write_text(path, line + "\n")
    except OSError as exc:
        why = exc.strerror or exc
        raise UserError(f"{path}: cannot create: {why}; pick another --out") from None


class ResultsWriter:
    """Appends one JSON line per record, flushed and fsynced before `append` returns."""

    def __init__(self, path: Path) -> None:
        try:
            self._f: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115 - see close()
        except OSError as exc:
            raise UserError(f"{path}: cannot append: {exc.strerror or exc}") from None

    def append(self, record: dict[str, Any]) -> None:
        self._f.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
