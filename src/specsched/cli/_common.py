"""Helpers shared by CLI commands: integer lists, JSON output, the rich console."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

from specsched.errors import UserError
from specsched.io import show_text
from specsched.schedule import INF


def stdout_console() -> Console:
    return Console(highlight=False, soft_wrap=True)


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


def parse_int_list(text: str, what: str, minimum: int = 0, maximum: int = INF) -> list[int]:
    """Parse '100,100,8000' into ints in [minimum, maximum]; a bad item is a one-line UserError
    naming `what` (the item clipped: a 5,000-digit number is not echoed back)."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise UserError(f"{what}: expected a comma-separated list of integers, got "
                        f"{show_text(text, 40)!r}")
    out: list[int] = []
    for i, item in enumerate(items):
        if len(item) > 20:
            raise UserError(f"{what}: item {i} ({show_text(item, 20)}) is too long for an integer "
                            f"(at most {maximum})")
        try:
            value = int(item)
        except ValueError:
            shown = show_text(item, 20)
            raise UserError(f"{what}: item {i} ({shown!r}) is not an integer") from None
        if value < minimum:
            raise UserError(f"{what}: item {i} ({value}) must be >= {minimum}")
        if value > maximum:
            raise UserError(f"{what}: item {i} ({value}) must be <= {maximum}")
        out.append(value)
    return out
