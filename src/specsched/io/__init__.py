"""File and dict plumbing shared by every room: atomic writes, bounded reads of user files, and
strict mapping -> dataclass loading. No torch; every failure is a one-line `UserError`.

- `atomic_write_bytes` / `atomic_write_text` / `atomic_write_json`: a temp file in the same folder,
  fsync, `os.replace`: a reader (or a crash) never sees half a file, and an existing file is only
  replaced once the new one is complete.
- `read_user_text`: a user-named file, refused when it is not a regular file (a FIFO would block,
  a device never ends) or larger than a limit, decoded as UTF-8 with a one-line error.
- `parse_json_text` / `parse_yaml_text` / `parse_data_text`: user JSON and YAML with bounded
  nesting, bounded alias expansion and bounded integers (`specsched.io.data`).
- `show_text` / `show_value` / `show_items`: user strings and values as they may appear inside a
  one-line error (escaped, clipped, never raising).
- `check_keys` / `dataclass_from_mapping`: unknown keys are an error that names them and the
  allowed ones (a misspelt option must not be ignored silently).
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from specsched.errors import UserError
from specsched.io.data import (
    MAX_DEPTH,
    MAX_INT_DIGITS,
    MAX_NODES,
    parse_data_text,
    parse_json_text,
    parse_yaml_text,
    show_items,
    show_text,
    show_value,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_NODES",
    "MiB",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "check_keys",
    "check_output_path",
    "dataclass_from_mapping",
    "parse_data_text",
    "parse_json_text",
    "parse_yaml_text",
    "read_user_bytes",
    "read_user_text",
    "show_items",
    "show_text",
    "show_value",
]

T = TypeVar("T")
MiB = 1 << 20


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` atomically (see module doc); creates the parent folder."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{target.parent}: cannot create the folder ({exc.strerror})") from None
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_output_path(path: str | Path, what: str) -> None:
    """Refuse, before any work, an output path that cannot be written: a folder in its place, or
    a nearest existing ancestor that is not a writable folder (the folders below it are created
    at write time)."""
    target = Path(path)
    shown = show_text(str(path), 120)
    if target.is_dir():
        raise UserError(f"{shown}: is a directory; give a file name for the {what}")
    parent = target.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UserError(f"{shown}: {parent} is not a folder, so the {what} cannot be written")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"{shown}: no permission to write in {parent} (the {what})")


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any, indent: int | None = 1) -> None:
    """JSON with a final newline; NaN/inf are refused (they are not JSON)."""
    atomic_write_text(path, json.dumps(obj, indent=indent, allow_nan=False) + "\n")


def read_user_text(path: str | Path, what: str, max_bytes: int = 16 * MiB) -> str:
    """The UTF-8 text of a user-named regular file of at most `max_bytes`."""
    data = read_user_bytes(path, what, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{show_text(str(path), 120)}: not valid UTF-8 text (byte {exc.start}); "
                        f"save the {what} file as UTF-8") from None


def read_user_bytes(path: str | Path, what: str, max_bytes: int = 16 * MiB) -> bytes:
    """The bytes of a user-named regular file of at most `max_bytes` (a pipe or a device, which
    would block or never end, is refused before it is opened)."""
    p = Path(path)
    shown = show_text(str(path), 120)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise UserError(f"{shown}: no such file (the {what} file)") from None
    except ValueError:  # an embedded NUL byte
        raise UserError(f"{shown}: not a valid file name (the {what} file)") from None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise UserError(f"{shown}: not a {what} file (the name is too long)") from None
        raise UserError(f"{shown}: cannot read the {what} file ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"{shown}: is a directory, expected a {what} file")
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{shown}: not a regular file (a pipe or a device?); give a {what} file")
    if st.st_size > max_bytes:
        raise UserError(f"{shown}: {st.st_size} bytes is over the {max_bytes} byte limit for a "
                        f"{what} file")
    try:
        with p.open("rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise UserError(f"{shown}: cannot read the {what} file ({exc.strerror or exc})") from None
    if len(data) > max_bytes:  # grew since stat
        raise UserError(f"{shown}: over the {max_bytes} byte limit for a {what} file")
    return data


def check_keys(obj: Any, allowed: set[str] | frozenset[str], where: str) -> dict[str, Any]:
    """`obj` as a dict whose keys are all in `allowed`; else a one-line UserError."""
    if not isinstance(obj, Mapping):
        raise UserError(f"{where}: expected a mapping, got {type(obj).__name__}")
    unknown = sorted(str(k) for k in obj if str(k) not in allowed)
    if unknown:
        raise UserError(
            f"{where}: unknown key(s) {show_text(', '.join(unknown), 200)}; allowed: "
            f"{', '.join(sorted(allowed))}"
        )
    return dict(obj)


def dataclass_from_mapping(cls: type[T], obj: Any, where: str) -> T:
    """`cls(**obj)` for a dataclass, refusing unknown keys; its own validation errors pass
    through, and a wrong call (missing required field) becomes a UserError naming `where`."""
    names = {f.name for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    fields = check_keys(obj, names, where)
    try:
        return cls(**fields)
    except TypeError as exc:
        raise UserError(f"{where}: {exc}") from None
