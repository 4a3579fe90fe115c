"""Every server a script starts listens on loopback only (`--host 127.0.0.1`): a benchmark server
must not be reachable from the network. Scans scripts/ and examples/ so the flag cannot regress."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).parents[2]
SCANNED = (REPO / "scripts", REPO / "examples")
SUFFIXES = {".sh", ".bash", ".py", ".yaml", ".yml", ".json", ""}
SERVER_START = re.compile(
    r"vllm\.entrypoints\.openai\.api_server|\bvllm[\"',\s]+serve\b|sglang\.launch_server"
    r"|\bllama-server\b|\bhttp\.server\b|\buvicorn\b"
)
SEP = r"[\s\"'=,]+"  # shell words, `--host=...`, and JSON/YAML/Python lists ("--host", "...")
LOOPBACK = re.compile(rf"--host{SEP}127\.0\.0\.1\b")
ANY_HOST = re.compile(rf"--host{SEP}([^\s\"',\]]+)")


def logical_lines(text: str) -> list[str]:
    """Lines with shell/Python backslash continuations joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", text).splitlines()
    return [line for line in joined if not line.lstrip().startswith("#")]


def test_every_started_server_binds_loopback() -> None:
    starts = []
    for root in SCANNED:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.suffix not in SUFFIXES:
                continue
            for line in logical_lines(path.read_text(errors="replace")):
                hosts = ANY_HOST.findall(line)
                assert all(h == "127.0.0.1" for h in hosts), f"{path}: binds {hosts}: {line}"
                if SERVER_START.search(line):
                    starts.append(path)
                    assert LOOPBACK.search(line), (
                        f"{path.relative_to(REPO)} starts a server without --host 127.0.0.1: "
                        f"{line.strip()}")
    found = {p.name for p in starts}
    assert {"cpu_compare.sh", "gpu_compare.sh"} <= found  # the scan sees the known launchers


def test_the_scan_catches_a_missing_host() -> None:
    bad = 'python -m vllm.entrypoints.openai.api_server --model m \\\n  --port 8000 "$@"'
    good = 'python -m vllm.entrypoints.openai.api_server --model m \\\n  --host 127.0.0.1 --port 1'
    listed = '["python", "-m", "sglang.launch_server", "--host", "127.0.0.1"]'
    assert [bool(LOOPBACK.search(x)) for x in logical_lines(bad + "\n" + good + "\n" + listed)] \
        == [False, True, True]
    assert ANY_HOST.findall("vllm serve m --host 0.0.0.0") == ["0.0.0.0"]
