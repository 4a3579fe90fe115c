"""User JSON and YAML, decoded with limits: no input makes a later step recurse, loop or print
without bound, and every failure is a one-line `UserError` starting with the caller's `where`.

- nesting: at most `MAX_DEPTH` lists/mappings deep (schedules need 2, experiment files ~5);
- integers: at most `MAX_INT_DIGITS` digits (Python refuses to print ints over 4300 digits, so an
  error message quoting one would itself fail);
- JSON: NaN / Infinity are refused (they are not JSON);
- YAML aliases: never recursive (`&a [*a]`), and the document expanded through its aliases holds
  at most `MAX_NODES` values (a "billion laughs" is refused before anything is built);
- YAML scalars follow the YAML 1.2 core schema, not PyYAML's YAML 1.1: only decimal integers
  (`17`, `-3`; not `017`, `0o17`, `0x1f`, `1_000`, sexagesimal `1:30`), floats, `true`/`false`,
  `null`. Everything else (`yes`, `on`, `1:30`, `2024-01-01`) stays a string, so a schedule
  position holding `1:30` is an error instead of the number 90.

Here JSON (`parse_json_text`) and the choice by suffix (`parse_data_text`); YAML in `yaml_data.py`
(libyaml's event parser where PyYAML has it, PyYAML's Python composer with the limits above);
the limits and `show_*` (a user value inside a one-line error) in `show.py`.
"""

from __future__ import annotations

import json
from typing import Any

from specsched.errors import UserError
from specsched.io.show import (
    MAX_DEPTH,
    MAX_INT_DIGITS,
    MAX_NODES,
    show_items,
    show_text,
    show_value,
)
from specsched.io.yaml_data import LOADERS, parse_yaml_text

__all__ = ["LOADERS", "MAX_DEPTH", "MAX_INT_DIGITS", "MAX_NODES", "parse_data_text",
           "parse_json_text", "parse_yaml_text", "show_items", "show_text", "show_value"]


def _problem_tree(obj: Any) -> str | None:
    """Why decoded JSON is refused (too deep), else None. Iterative: JSON data is a tree."""
    stack: list[tuple[Any, int]] = [(obj, 1)] if isinstance(obj, (list, dict)) else []
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels"
        children = value.values() if isinstance(value, dict) else value
        stack.extend((c, depth + 1) for c in children if isinstance(c, (list, dict)))
    return None


def parse_json_text(text: str, where: str) -> Any:
    """Decode user JSON with the module's limits."""

    def parse_int(digits: str) -> int:
        n = len(digits.lstrip("+-"))
        if n > MAX_INT_DIGITS:
            raise UserError(f"{where}: an integer with {n} digits is too large (at most "
                            f"{MAX_INT_DIGITS} digits)")
        return int(digits)

    def parse_constant(name: str) -> Any:
        raise UserError(f"{where}: {name} is not a JSON number")

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(items)
        if len(obj) < len(items):  # a key given twice: which value was meant is unknowable
            seen: set[str] = set()
            for key, _ in items:
                if key in seen:
                    raise UserError(f"{where}: key {show_text(key, 30)!r} appears twice in one "
                                    "object")
                seen.add(key)
        return obj

    try:
        obj = json.loads(text, parse_int=parse_int, parse_constant=parse_constant,
                         object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise UserError(f"{where}: invalid JSON: {exc.msg} at line {exc.lineno} column "
                        f"{exc.colno}") from None
    except RecursionError:  # the C scanner recurses per level; refused below at MAX_DEPTH anyway
        raise UserError(f"{where}: nested deeper than {MAX_DEPTH} levels") from None
    except MemoryError:
        raise UserError(f"{where}: too large to read in the memory available") from None
    problem = _problem_tree(obj)
    if problem is not None:
        raise UserError(f"{where}: {problem}")
    return obj


def parse_data_text(text: str, where: str, suffix: str) -> Any:
    """JSON for a `.json` suffix, else YAML."""
    if suffix.lower() == ".json":
        return parse_json_text(text, where)
    return parse_yaml_text(text, where)
