"""Helpers shared by CLI commands: integer lists, JSON output, the rich console."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

from specsched.errors import UserError


def stdout_console() -> Console:
    return Console(highlight=False, soft_wrap=True)


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


def parse_int_list(text: str, what: str, minimum: int = 0) -> list[int]:
    """Parse '100,100,8000' into ints; a bad item is a one-line UserError naming `what`."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise UserError(f"{what}: expected a comma-separated list of integers, got {text!r}")
    out: list[int] = []
    for i, item in enumerate(items):
        try:
            value = int(item)
        except ValueError:
            raise UserError(f"{what}: item {i} ({item!r}) is not an integer") from None
        if value < minimum:
            raise UserError(f"{what}: item {i} ({value}) must be >= {minimum}")
        out.append(value)
    return out
