"""The limits on user data (`data.py` JSON, `yaml_data.py` YAML) and how a user value appears
inside a one-line error: escaped, clipped, never raising (a 5,000-digit int has no printable
repr, a recursive list none at all).
"""

from __future__ import annotations

import contextlib
from typing import Any

MAX_DEPTH = 64
MAX_INT_DIGITS = 30
MAX_NODES = 200_000  # values (after alias expansion); a 100 x 100 5-item grid holds 60,000,
# the largest YAML schedule (1 MiB) ~180,000; the composed graph costs ~0.5 KB and ~10 us a value


def show_text(text: str, limit: int = 80) -> str:
    """`text` for a one-line error, cut to `limit` characters: bytes the shell could not decode
    (lone surrogates, PEP 383) shown as `\\xff`, control characters escaped (`\\n`)."""
    cut = text[:limit]
    if not cut.isprintable():
        with contextlib.suppress(UnicodeEncodeError):  # a surrogate that is no escaped byte
            cut = cut.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        cut = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                      for c in cut)
    return cut + ("..." if len(text) > limit else "")


def show_value(value: Any, limit: int = 40) -> str:
    """A user value (any Python object) for a one-line error: never raises, never long. Scalars
    as repr (an int of more than 20 digits by its size: printing a 5,000-digit int raises),
    strings escaped and clipped, containers by type and size (a recursive or 10,000-deep list has
    no printable repr), other objects by type."""
    if value is None or isinstance(value, (bool, float)):
        return repr(value)
    if isinstance(value, int):
        if abs(value) < 10**20:
            return repr(value)
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    if isinstance(value, str):
        return repr(show_text(value, limit))
    if isinstance(value, (list, tuple, dict, set, frozenset, bytes, bytearray)):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"a {type(value).__name__}"


def show_items(items: Any, limit: int = 8) -> str:
    """A list or tuple of user values as `[a, b, ...]`, each by `show_value`."""
    shown = [show_value(v) for v in list(items[:limit])]
    return "[" + ", ".join(shown) + (", ..." if len(items) > limit else "") + "]"
