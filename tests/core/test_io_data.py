"""`specsched.io.data`: bounded JSON/YAML decoding, with both YAML loaders (libyaml's event
parser and pure Python), and error text that is always one short line."""

from __future__ import annotations

import time
from typing import Any

import pytest

from specsched.errors import UserError
from specsched.io import parse_json_text, show_items, show_text, show_value
from specsched.io.data import LOADERS, MAX_DEPTH, parse_yaml_text

LAUGHS = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(9)
)
HOSTILE_YAML = [
    ("[" * 100_000 + "]" * 100_000, "invalid YAML"),
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested deeper than 64"),
    ("".join("  " * i + "-\n" for i in range(200)), "nested deeper than 64"),
    ("a: &a [*a]", "recursive"),
    ("&a {x: {y: *a}}", "recursive"),
    (LAUGHS, "once aliases are expanded"),
    ("a0: &a0 {x: 1}\n" + "".join(f"a{i}: &a{i} {{<<: *a{i - 1}}}\n" for i in range(1, 100)),
     "nested deeper than 64"),
    ("[" + "9" * 5000 + "]", "5000 digits"),
    ("!!int 0x1f", "not a decimal integer"),
    ("!!python/name:os.system", "invalid YAML"),
    ("*undefined", "invalid YAML"),
    ("[1, '\udcff']", "invalid YAML"),
]


@pytest.mark.parametrize("loader", LOADERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize(("text", "fragment"), HOSTILE_YAML)
def test_hostile_yaml_is_one_line_error(loader: Any, text: str, fragment: str) -> None:
    start = time.process_time()  # work done (CPU), not the machine's load
    with pytest.raises(UserError, match=fragment) as info:
        parse_yaml_text(text, "t.yaml", loader)
    assert "\n" not in str(info.value) and len(str(info.value)) < 300
    assert time.process_time() - start < 2.0


@pytest.mark.parametrize("loader", LOADERS, ids=lambda c: c.__name__)
def test_yaml_core_scalars(loader: Any) -> None:
    text = ("[1:30, 017, 0o17, 0x1f, 1_000, yes, No, on, OFF, y, 2024-01-01, =, 17, -3, +4, 0, "
            "1.5, 1e3, .inf, -.inf, true, False, null, ~, '']")
    assert parse_yaml_text(text, "t", loader) == [
        "1:30", "017", "0o17", "0x1f", "1_000", "yes", "No", "on", "OFF", "y", "2024-01-01", "=",
        17, -3, 4, 0, 1.5, 1000.0, float("inf"), float("-inf"), True, False, None, None, "",
    ]
    merged = parse_yaml_text("a: &a {x: 1}\nb: {<<: *a, y: 2}\n", "t", loader)
    assert merged == {"a": {"x": 1}, "b": {"x": 1, "y": 2}}  # shallow merges still work


@pytest.mark.parametrize(("text", "fragment"), [
    ("[" * 100_000, "nested deeper than 64"),
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested deeper than 64"),
    ('{"a": ' + "9" * 31 + "}", "31 digits"),
    ("[NaN]", "NaN is not a JSON number"),
    ("[-Infinity]", "-Infinity is not a JSON number"),
    ('{"a": [1, 2}', "invalid JSON"),
])
def test_hostile_json_is_one_line_error(text: str, fragment: str) -> None:
    with pytest.raises(UserError, match=fragment):
        parse_json_text(text, "t.json")
    assert parse_json_text("[" * MAX_DEPTH + "]" * MAX_DEPTH, "t") is not None


def test_show_helpers_never_raise_or_flood() -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    loop: list[Any] = []
    loop.append(loop)
    for value in (10**5000, -(10**5000), deep, loop, "x" * 10**6, "a\nb\x00", b"\xff", object()):
        assert len(show_value(value)) < 80 and "\n" not in show_value(value)
    assert show_items([1, 10**5000, "1:30", 2.5, None, True, [1], {}, 9, 9]).startswith(
        "[1, an integer of about 5001 digits, '1:30', 2.5, None, True, a list of 1 items")
    assert show_text("\udcff\udcfe.json") == "\\xff\\xfe.json"
    assert show_text("a\nb") == "a\\nb" and show_text("é" * 100, 3) == "ééé..."
