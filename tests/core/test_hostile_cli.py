"""Hostile input through the command line (issue 13): each gives exactly one `error: ...` line on
stderr, exit code 2, no traceback, within seconds; a handful also run as subprocesses under a
timeout and an address-space cap (RLIMIT_AS), so a hang or an unbounded allocation fails them."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from specsched.cli import main

GOOD = "[[1, 4, 1, 1024, 2], [1, 4, 1025, 4096, 5]]"
# Per in-process case: a couple of seconds of work is the contract, with CI slack. Work is this
# process's CPU time (other processes on a loaded 2-core machine do not count); wall time gets
# a looser bound so a finite blocking wait still shows.
SECONDS = 5.0
WALL_SECONDS = 30.0
AS_LIMIT = 1 << 30  # 1 GiB of address space: `specsched check` needs ~300 MiB


def _deep_json(d: Path) -> str:
    (d / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    return str(d / "deep.json")


def _yaml(text: str) -> Callable[[Path], str]:
    def make(d: Path) -> str:
        path = d / f"s{abs(hash(text)) % 10**8}.yaml"
        path.write_text(text)
        return str(path)
    return make


def _bytes_file(name: str, data: bytes) -> Callable[[Path], str]:
    def make(d: Path) -> str:
        (d / name).write_bytes(data)
        return str(d / name)
    return make


def _fifo(d: Path) -> str:
    path = d / "fifo.json"
    os.mkfifo(path)
    return str(path)


def _sparse(d: Path) -> str:
    path = d / "big.json"
    with path.open("wb") as fh:
        fh.truncate(64 << 20)  # 64 MiB of holes: refused by size before any read
    return str(path)


def _experiment(schedule_yaml: str, arm: str = "a") -> Callable[[Path], str]:
    def make(d: Path) -> str:
        path = d / "exp.yaml"
        path.write_text(
            f"name: x\nbackend: simulated\narms:\n  - name: {arm}\n    schedule: "
            + schedule_yaml
            + "\nscenarios:\n  - {name: s, kind: batch, prompt_lens: [10], output_len: 4}\n"
        )
        return str(path)
    return make


LAUGHS = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(9)
)
MERGES = "a0: &a0 {x: 1}\n" + "".join(f"a{i}: &a{i} {{<<: *a{i - 1}}}\n" for i in range(1, 300))
BLOCK_DEEP = "".join("  " * i + "-\n" for i in range(300))

# (id, argv builder from a temp folder, fragment of the error line)
Case = tuple[str, Callable[[Path], list[str]], str]


def check(source: Callable[[Path], str] | str) -> Callable[[Path], list[str]]:
    return lambda d: ["check", source(d) if callable(source) else source]


CASES: list[Case] = [
    ("json-deep-inline", check("[" * 100_000), "nested deeper than 64"),
    ("json-deep-file", check(_deep_json), "nested deeper than 64"),
    ("yaml-deep-flow", check(_yaml("[" * 100_000 + "]" * 100_000)), "invalid YAML"),
    ("yaml-deep-block", check(_yaml(BLOCK_DEEP)), "nested deeper than 64"),
    ("yaml-recursive-alias", check(_yaml("a: &a [*a]\n")), "recursive"),
    ("yaml-recursive-map", check(_yaml("&a {speculative_config: *a}\n")), "recursive"),
    ("yaml-billion-laughs", check(_yaml(LAUGHS)), "once aliases are expanded"),
    ("yaml-merge-chain", check(_yaml(MERGES)), "nested deeper than 64"),
    ("json-huge-int", check("[[1, 4, " + "9" * 5000 + "]]"), "5000 digits"),
    ("json-huge-negative", check("[[-" + "9" * 20 + ", 4, 2]]"), "too small"),
    ("json-int-over-int32", check("[[1, 2147483648, 2]]"), "too large"),
    ("yaml-huge-int", check(_yaml("- [1, 4, " + "7" * 4400 + "]\n")), "4400 digits"),
    ("json-huge-float", check("[[1, 4, 1e999]]"), "got a float (inf)"),
    ("json-float-k", check("[[1, 4, 1e308]]"), "got a float"),
    ("json-nan", check("[[1, 4, NaN]]"), "NaN is not a JSON number"),
    ("inline-too-long", check("x" * 10_000), "neither inline JSON"),
    ("inline-newline", check("[[1, 4, 2]]\n]"), "invalid JSON"),
    ("name-too-long", check("y" * 300 + ".json"), "name is too long"),
    ("nul-in-path", check("a\x00b.json"), "not a valid file name"),
    ("undecodable-path", check(os.fsdecode(b"\xff\xfe.json")), "no such file"),
    ("fifo", check(_fifo), "not a regular file"),
    ("dev-zero", check("/dev/zero"), "not a regular file"),
    ("directory", check(lambda d: str(d)), "is a directory"),
    ("oversize", check(_sparse), "byte limit"),
    ("invalid-utf8", check(_bytes_file("bad.json", b"[[1, 4, \xff]]")), "not valid UTF-8"),
    ("yaml-sexagesimal", check(_yaml("- [1, 4, 1:30]\n")), "got str ('1:30')"),
    ("yaml-octal", check(_yaml("- [1, 4, 017]\n")), "got str ('017')"),
    ("yaml-0o-octal", check(_yaml("- [1, 4, 0o17]\n")), "got str ('0o17')"),
    ("yaml-yes", check(_yaml("- [1, 4, yes]\n")), "got str ('yes')"),
    ("yaml-python-tag", check(_yaml("!!python/object/apply:os.system [ls]\n")),
     "invalid YAML"),
    ("wrappers", check("{\"specsched\": " * 10 + "{}" + "}" * 10), "nested"),
    ("route-huge-ctx", lambda d: ["route", GOOD, "--ctx", "1," + "9" * 5000], "--ctx: item 1"),
    ("export-deep", lambda d: ["export", "[" * 5000, "--to", "vllm"], "nested deeper"),
    ("max-k-huge", lambda d: ["check", GOOD, "--max-k", "9" * 25], "too large"),
    ("bench-alias-bomb", lambda d: ["bench", _yaml(LAUGHS)(d), "--dry-run"],
     "once aliases are expanded"),
    ("bench-yaml-many-values", lambda d: ["bench", _yaml("[" + "0," * 1_500_000 + "0]")(d),
                                          "--dry-run"], "more than 200000 values"),
    ("yaml-schedule-over-limit", check(_yaml("[" + "0," * 600_000 + "0]")),
     "write a table this large as a .json file"),
    ("json-duplicate-key", check('{"schedule": [[1, 4, 2]], "schedule": [[1, 4, 3]]}'),
     "key 'schedule' appears twice"),
    ("yaml-duplicate-key", check(_yaml("schedule: [[1, 4, 2]]\nschedule: [[1, 4, 3]]\n")),
     "key 'schedule' appears twice"),
    ("export-huge-max-num-seqs",
     lambda d: ["export", GOOD, "--to", "vllm", "--max-num-seqs", "1000000000000"],
     "--max-num-seqs must be in [1, 65536]"),
    ("report-fifo", lambda d: ["report", _fifo(d), "--no-charts"], "not a regular file"),
    ("report-dev-zero", lambda d: ["report", "/dev/zero", "--no-charts"], "not a regular file"),
    ("bench-resume-fifo",
     lambda d: ["bench", _experiment("[[1, 8, 2]]")(d), "--out", _fifo(d), "--resume"],
     "not a regular file"),
    ("bench-arm-name-path",
     lambda d: ["bench", _experiment("[[1, 8, 2]]", arm="../../x")(d), "--dry-run"],
     "arm name '../../x' must be"),
    ("bench-arm-name-space",
     lambda d: ["bench", _experiment("[[1, 8, 2]]", arm="'a b'")(d), "--dry-run"],
     "arm name 'a b' must be"),
    ("bench-arm-sexagesimal",
     lambda d: ["bench", _experiment("[[1, 8, 1:30]]")(d), "--dry-run"], "got str ('1:30')"),
]


def assert_one_error_line(rc: int, err: str, fragment: str) -> None:
    lines = err.strip().splitlines()
    assert rc == 2, err[-500:]
    assert len(lines) == 1 and lines[0].startswith("error: "), err[-1000:]
    assert fragment in lines[0], lines[0]
    assert "Traceback" not in err and len(lines[0]) <= 2100


@pytest.mark.parametrize(("argv", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_input_in_process(
    argv: Callable[[Path], list[str]], fragment: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = argv(tmp_path)
    start, wall_start = time.process_time(), time.perf_counter()
    rc = main(args)
    elapsed, wall = time.process_time() - start, time.perf_counter() - wall_start
    out = capsys.readouterr()
    assert_one_error_line(rc, out.err, fragment)
    assert elapsed < SECONDS and wall < WALL_SECONDS, f"{elapsed:.1f} s CPU, {wall:.1f} s wall"


def _cap_memory() -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


SUBPROCESS = ["json-deep-file", "yaml-billion-laughs", "yaml-recursive-alias", "fifo",
              "dev-zero", "json-huge-int", "oversize", "bench-yaml-many-values",
              "export-huge-max-num-seqs", "report-dev-zero", "bench-resume-fifo"]


@pytest.mark.parametrize("case", SUBPROCESS)
def test_hostile_input_subprocess_bounded(case: str, tmp_path: Path) -> None:
    argv, fragment = next(c[1:] for c in CASES if c[0] == case)
    proc = subprocess.run(
        [sys.executable, "-m", "specsched", *argv(tmp_path)], capture_output=True, text=True,
        timeout=60, preexec_fn=_cap_memory, check=False,
    )
    assert_one_error_line(proc.returncode, proc.stderr, fragment)


def test_large_legal_schedules_check_in_seconds(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """10,000 batch rows and a 100 x 100 grid: linear checking, a bounded printout."""
    import json

    rows = [[3 * i + 1, 3 * i + 3, i % 5] for i in range(10_000)]
    grid = [[10 * r + 1, 10 * r + 10, 100 * c + 1, 100 * c + 100 if c < 99 else 2**31 - 1,
             (r + c) % 8] for r in range(100) for c in range(100)]
    for name, entries in (("rows.json", rows), ("grid.json", grid)):
        (tmp_path / name).write_text(json.dumps(entries))
        (tmp_path / name.replace(".json", ".yaml")).write_text(
            "".join(f"- {e}\n" for e in entries))
    # the largest YAML schedule accepted: ~1 MiB of 5-item entries (~200,000 values)
    near = "".join(f"- [{i + 1}, {i + 1}, 1, 2147483647, {i % 8}]\n" for i in range(30_000))
    assert 0.8 * 2**20 < len(near) <= 2**20
    (tmp_path / "near.yaml").write_text(near)
    for name in ("rows.json", "grid.json", "rows.yaml", "grid.yaml", "near.yaml"):
        start = time.process_time()  # work done, not the machine's load
        rc = main(["check", str(tmp_path / name)])
        elapsed = time.process_time() - start
        out = capsys.readouterr().out
        assert rc == 0 and "valid" in out, name
        assert elapsed < 10.0 and len(out.splitlines()) < 120, (name, elapsed)
