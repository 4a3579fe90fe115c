"""Fuzzed schedule loading (issue 13): Python objects and JSON/YAML texts, valid and hostile.

Loading returns a `Schedule` or raises `ScheduleError` / `UserError`, never another exception; a
valid schedule's lookups agree with a brute-force oracle (a linear scan over the entries as
written). 2,000 cases in all, a few seconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specsched.errors import UserError
from specsched.io.data import LOADERS, parse_yaml_text
from specsched.schedule import INF, Schedule, ScheduleError, load_schedule, schedule_from_obj

FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)


def fuzz(n: int) -> settings:
    """Settings for a fuzz test of n cases (the file runs 2,000 in all)."""
    return settings(FUZZ, max_examples=n)


HOSTILE_TOKENS = (
    "1:30", "017", "0o17", "0x1f", "1_000", "yes", "no", "on", "off", "~", "null", "1e999",
    "-1e999", ".inf", ".nan", "NaN", "Infinity", "9" * 5000, "-" + "9" * 4400, "1.0", "true",
    "2024-01-01", "&a [*a]", "*nowhere", "!!python/object:os.system", "!!int 0o17", "[" * 80,
    "]", "{", "\t", "\x00", "\udcff", "<<: *a", "&a", "'", '"', "#", "- ", ": ", "\n  -",
)
PROBES = [(1, 0), (1, 1), (2, 7), (3, 1000), (5, 4096), (9, 4097), (64, 10**6), (10**4, 2**31)]


@st.composite
def valid_schedules(draw: st.DrawFn) -> tuple[list[list[int]], int | None]:
    """Entries of a valid 3- or 5-item schedule (shuffled, gaps allowed, bounds up to 2**31-1)
    and an optional max_k."""
    rows, cols = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch: list[tuple[int, int]] = []
    lo = 1
    for r in range(rows):
        hi = INF if r == rows - 1 and draw(st.booleans()) else lo + draw(st.integers(0, 9))
        batch.append((lo, hi))
        lo = hi + 1 + draw(st.integers(0, 3))
    ctx: list[tuple[int, int]] = []
    lo = 1
    for c in range(cols):
        hi = INF if c == cols - 1 else lo + draw(st.integers(0, 3000))
        ctx.append((lo, hi))
        lo = hi + 1
    ks = [[draw(st.integers(0, 128)) for _ in ctx] for _ in batch]
    if cols == 1 and draw(st.booleans()):
        entries = [[b0, b1, ks[r][0]] for r, (b0, b1) in enumerate(batch)]
    else:
        entries = [[b0, b1, c0, c1, ks[r][j]] for r, (b0, b1) in enumerate(batch)
                   for j, (c0, c1) in enumerate(ctx)]
    entries = draw(st.permutations(entries))
    return [list(e) for e in entries], draw(st.none() | st.integers(0, 128))


def oracle(entries: list[list[int]], max_k: int | None, bs: int, ctx: int) -> int:
    """K by a linear scan: the last batch range starting at or below bs; the context range
    holding ctx (below 1: the first; past the last: the last); clamped by max_k."""
    rows = sorted({(e[0], e[1]) for e in entries})
    row = [r for r in rows if r[0] <= bs][-1]
    cells = sorted((e[2], e[3], e[4]) if len(e) == 5 else (1, INF, e[2])
                   for e in entries if (e[0], e[1]) == row)
    k = next((c[2] for c in cells if c[0] <= ctx <= c[1]), cells[0][2] if ctx < 1 else None)
    k = cells[-1][2] if k is None else k
    return k if max_k is None else min(k, max_k)


def check_against_oracle(s: Schedule, entries: list[list[int]], max_k: int | None) -> None:
    for bs, ctx in PROBES:
        assert s.k_for(bs, ctx) == oracle(entries, max_k, bs, ctx), (bs, ctx)


scalars = st.one_of(
    st.integers(-3, 140), st.integers(-(2**70), 2**70), st.sampled_from([2**31 - 1, 2**31, 10**40]),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
    st.text(max_size=4), st.sampled_from(HOSTILE_TOKENS),
)
keys = st.sampled_from(["speculative_token_schedule", "num_speculative_tokens_per_batch_size",
                        "schedule", "num_speculative_tokens", "speculative_config", "specsched",
                        "x"]) | st.text(max_size=3)
junk = st.recursive(
    scalars,
    lambda c: st.lists(c, max_size=6) | st.tuples(c, c, c) | st.dictionaries(keys, c, max_size=3),
    max_leaves=25,
)


def wrap(entries: Any, max_k: int | None, how: int) -> tuple[Any, int | None]:
    """The shapes users write; returns (object, max_k to pass explicitly)."""
    if how == 0:
        return entries, max_k
    if how == 1:
        return {"speculative_token_schedule": entries}, max_k
    body: dict[str, Any] = {"method": "ngram", "num_speculative_tokens_per_batch_size": entries}
    if max_k is not None:
        body["num_speculative_tokens"] = max_k
    return ({"speculative_config": body} if how == 3 else body), None


def load_or_refuse(obj: Any, max_k: Any = None) -> Schedule | None:
    try:
        return schedule_from_obj(obj, max_k)
    except (ScheduleError, UserError):  # the only exceptions a user may see
        return None


@fuzz(350)
@given(valid_schedules(), st.integers(0, 3))
def test_valid_objects_match_the_oracle(sched: Any, how: int) -> None:
    entries, max_k = sched
    obj, explicit = wrap(entries, max_k, how)
    s = schedule_from_obj(obj, explicit)
    check_against_oracle(s, entries, max_k)
    again = schedule_from_obj(s.entries(5), max_k)  # the entries as written round-trip
    assert again.k_grid == s.k_grid and again.effective_grid == s.effective_grid


@fuzz(350)
@given(valid_schedules(), st.integers(0, 3), st.integers(0, 200), st.integers(0, 4), scalars)
def test_mutated_objects_load_or_refuse(sched: Any, how: int, idx: int, item: int,
                                        value: Any) -> None:
    entries, max_k = sched
    mutated = [list(e) for e in entries]
    row = mutated[idx % len(mutated)]
    row[item % len(row)] = value
    obj, explicit = wrap(mutated, max_k, how)
    s = load_or_refuse(obj, explicit)
    if s is not None:
        check_against_oracle(s, mutated, max_k)


@fuzz(350)
@given(junk, st.none() | scalars)
def test_junk_objects_load_or_refuse(obj: Any, max_k: Any) -> None:
    s = load_or_refuse(obj, max_k)
    if s is not None:
        assert all(0 <= s.k_for(bs, ctx) <= 128 for bs, ctx in PROBES)


def render(obj: Any, style: int) -> tuple[str, str]:
    """(text, suffix): compact or indented JSON, flow or block YAML."""
    if style == 0:
        return json.dumps(obj), ".json"
    if style == 1:
        return json.dumps(obj, indent=2), ".json"
    return yaml.safe_dump(obj, default_flow_style=style == 2), ".yaml"


@pytest.fixture(scope="module")
def text_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz_texts")


def load_text(text_dir: Path, text: str, suffix: str, inline: bool,
              max_k: int | None = None) -> Schedule | None:
    """Through `load_schedule`: inline JSON, or a file (UTF-8; a lone surrogate becomes an
    invalid byte, as a shell passes undecodable bytes)."""
    try:
        if inline and suffix == ".json" and text.lstrip().startswith(("[", "{")):
            return load_schedule(text, max_k)
        path = text_dir / f"s{suffix}"
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        return load_schedule(path, max_k)
    except (ScheduleError, UserError):
        return None


@fuzz(300)
@given(sched=valid_schedules(), how=st.integers(0, 3), style=st.integers(0, 3),
       inline=st.booleans())
def test_valid_texts_match_the_oracle(sched: Any, how: int, style: int, inline: bool,
                                      text_dir: Path) -> None:
    entries, max_k = sched
    obj, explicit = wrap(entries, max_k, how)
    text, suffix = render(obj, style)
    s = load_text(text_dir, text, suffix, inline, explicit)
    assert s is not None, text[:200]
    check_against_oracle(s, entries, max_k)


@fuzz(350)
@given(sched=valid_schedules() | junk.map(lambda j: (j, None)), how=st.integers(0, 3),
       style=st.integers(0, 3), replace=st.booleans(), inline=st.booleans(),
       edits=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(HOSTILE_TOKENS)),
                      min_size=1, max_size=3))
def test_hostile_texts_load_or_refuse(sched: Any, how: int, style: int,
                                      edits: list[tuple[int, str]], replace: bool, inline: bool,
                                      text_dir: Path) -> None:
    """A rendered schedule with hostile snippets inserted, or replacing a number."""
    obj = wrap(sched[0], sched[1], how)[0] if isinstance(sched[0], list) else sched[0]
    text, suffix = render(obj, style)
    for pos, token in edits:
        at = pos % (len(text) + 1)
        if replace:
            digits = [i for i, ch in enumerate(text) if ch.isdigit()]
            at = digits[pos % len(digits)] if digits else at
            text = text[:at] + token + text[at + 1:]
        else:
            text = text[:at] + token + text[at:]
    s = load_text(text_dir, text, suffix, inline)
    if s is not None:
        assert all(0 <= s.k_for(bs, ctx) <= 128 for bs, ctx in PROBES)


@pytest.mark.parametrize("loader", LOADERS, ids=lambda c: c.__name__)
@fuzz(150)
@given(text=st.text(alphabet=st.sampled_from("[]{}-:,&*!<>'\"# \n\t0179aoyn.e|"), max_size=60))
def test_random_yaml_text_never_escapes(loader: Any, text: str) -> None:
    try:
        obj = parse_yaml_text(text, "fuzz", loader)
    except UserError:
        return
    load_or_refuse(obj)
