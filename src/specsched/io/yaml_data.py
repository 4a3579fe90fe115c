"""User YAML, decoded with the limits of `show.py` (every failure a one-line `UserError` starting
with the caller's `where`):

- nesting: at most `MAX_DEPTH` lists/mappings deep; integers: at most `MAX_INT_DIGITS` digits;
- aliases: never recursive (`&a [*a]`), and the document expanded through its aliases holds at
  most `MAX_NODES` values (a "billion laughs" is refused before anything is built);
- scalars follow the YAML 1.2 core schema, not PyYAML's YAML 1.1: only decimal integers (`17`,
  `-3`; not `017`, `0o17`, `0x1f`, `1_000`, sexagesimal `1:30`), floats, `true`/`false`, `null`.
  Everything else (`yes`, `on`, `1:30`, `2024-01-01`) stays a string, so a schedule position
  holding `1:30` is an error instead of the number 90.

libyaml's event parser is used when PyYAML has it (fast; it refuses nesting over 1000 itself);
composing and constructing are PyYAML's Python code with the limits above.
"""

from __future__ import annotations

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
from specsched.io.show import MAX_DEPTH, MAX_INT_DIGITS, MAX_NODES, show_text

_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")


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
