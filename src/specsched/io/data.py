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

libyaml's event parser is used when PyYAML has it (fast; it refuses nesting over 1000 itself);
composing and constructing are PyYAML's Python code with the limits above.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from specsched.errors import UserError

MAX_DEPTH = 64
MAX_INT_DIGITS = 30
MAX_NODES = 200_000  # values (after alias expansion); a 100 x 100 5-item grid holds 60,000,
# the largest YAML schedule (1 MiB) ~180,000; the composed graph costs ~0.5 KB and ~10 us a value

_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")


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


# -- YAML ------------------------------------------------------------------------------------
class _CoreResolver(Resolver):
    """YAML 1.2 core-schema implicit types (PyYAML's defaults are YAML 1.1)."""

    # its own table (not PyYAML's 1.1 one), filled once below
    yaml_implicit_resolvers: dict[Any, Any] = {}  # noqa: RUF012


for _tag, _pattern, _first in (
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("int", r"^[-+]?(?:0|[1-9][0-9]*)$", "-+0123456789"),
    # a float has a point or an exponent: `017` is neither an int (leading zero) nor a float
    ("float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)(?:[eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+"
              r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", "-+.0123456789"),
    ("merge", r"^(?:<<)$", "<"),
):
    _CoreResolver.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", re.compile(_pattern),
                                        list(_first))


class _CoreConstructor(SafeConstructor):
    def construct_yaml_int(self, node: Node) -> int:
        """Decimal integers only, of bounded length (also for an explicit `!!int`)."""
        text = str(self.construct_scalar(node))  # type: ignore[arg-type]
        if not _DECIMAL.fullmatch(text):
            raise ConstructorError(None, None, f"{show_text(text, 30)!r} is not a decimal integer",
                                   node.start_mark)
        n = len(text.lstrip("+-"))
        if n > MAX_INT_DIGITS:
            raise ConstructorError(None, None, f"an integer with {n} digits is too large (at most "
                                   f"{MAX_INT_DIGITS} digits)", node.start_mark)
        return int(text)

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[Any, Any]:
        """A mapping whose own keys (merged `<<` keys may be overridden) are distinct."""
        if isinstance(node, MappingNode):
            seen: set[str] = set()
            for key_node, _ in node.value:
                if not isinstance(key_node, ScalarNode) or key_node.tag.endswith(":merge"):
                    continue
                if key_node.value in seen:
                    raise ConstructorError(None, None, f"key {show_text(key_node.value, 30)!r} "
                                           "appears twice", key_node.start_mark)
                seen.add(key_node.value)
        return super().construct_mapping(node, deep=deep)  # type: ignore[arg-type]


_CoreConstructor.add_constructor("tag:yaml.org,2002:int",  # type: ignore[type-var]
                                 _CoreConstructor.construct_yaml_int)


class _BoundedComposer(Composer):
    """Refuses nesting past MAX_DEPTH while composing, and a node graph whose aliases recurse or
    expand past MAX_NODES before anything is constructed."""

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        self._nodes += 1
        try:
            if self._nodes > MAX_NODES:  # counted as written, before the graph is whole
                raise yaml.composer.ComposerError(None, None, f"more than {MAX_NODES} values",
                                                  self.peek_event().start_mark)  # type: ignore[attr-defined]
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_DEPTH} "
                                                  "levels", self.peek_event().start_mark)  # type: ignore[attr-defined]
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self) -> Node | None:
        node = super().get_single_node()
        if node is not None:
            problem = _problem_graph(node)
            if problem is not None:
                raise yaml.composer.ComposerError(None, None, problem, node.start_mark)
        return node


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _problem_graph(root: Node) -> str | None:
    """Why a composed YAML node graph is refused, else None: an alias inside its own anchor (a
    cycle), more than MAX_NODES values or MAX_DEPTH levels once aliases are expanded (a chain of
    `<<: *prev` merges is shallow as written and deep when built). Iterative DFS with memoized
    subtree sizes and heights, linear in the distinct nodes."""
    size: dict[int, tuple[int, int]] = {}  # id -> (values, levels) of the expanded subtree
    on_path: set[int] = set()  # nodes entered and not finished: the current ancestor chain
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            on_path.discard(key)
            sub = [size[id(c)] for c in _children(node)]
            total = 1 + sum(n for n, _ in sub)
            height = 1 + max((h for _, h in sub), default=0)
            if total > MAX_NODES:
                return f"more than {MAX_NODES} values once aliases are expanded"
            if height > MAX_DEPTH + 1:
                return f"nested deeper than {MAX_DEPTH} levels (through aliases)"
            size[key] = (total, height)
            continue
        if key in size:
            continue
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                return "an alias refers to an anchor that contains it (a recursive structure)"
            if id(child) not in size:
                stack.append((child, False))
    return None


class _PyLoader(Reader, Scanner, Parser, _BoundedComposer, _CoreConstructor, _CoreResolver):
    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        _BoundedComposer.__init__(self)
        _CoreConstructor.__init__(self)
        _CoreResolver.__init__(self)


def _loader_classes() -> list[Any]:
    """libyaml's event parser under the Python composer when available, else pure Python."""
    out: list[Any] = []
    if yaml.__with_libyaml__:
        from yaml._yaml import CParser

        class _CLoader(_BoundedComposer, CParser, _CoreConstructor, _CoreResolver):
            def __init__(self, stream: str) -> None:
                CParser.__init__(self, stream)
                _BoundedComposer.__init__(self)
                _CoreConstructor.__init__(self)
                _CoreResolver.__init__(self)

        out.append(_CLoader)
    out.append(_PyLoader)
    return out


LOADERS: tuple[Any, ...] = tuple(_loader_classes())  # fastest first; tests run every one


def parse_yaml_text(text: str, where: str, loader: Any = None) -> Any:
    """Decode user YAML with the module's limits (one document)."""
    instance = None
    try:
        instance = (loader or LOADERS[0])(text)
        return instance.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or ""
        detail = f": {show_text(problem, 100)}" if problem else ""
        raise UserError(f"{where}: invalid YAML{at}{detail}") from None
    except UnicodeError:  # lone surrogates: not text libyaml can read
        raise UserError(f"{where}: invalid YAML: not valid Unicode text") from None
    except MemoryError:
        raise UserError(f"{where}: too large to read as YAML in the memory available; write it "
                        "as JSON") from None
    finally:
        if instance is not None:
            instance.dispose()


def parse_data_text(text: str, where: str, suffix: str) -> Any:
    """JSON for a `.json` suffix, else YAML."""
    if suffix.lower() == ".json":
        return parse_json_text(text, where)
    return parse_yaml_text(text, where)
