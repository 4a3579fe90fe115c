"""The rooms of `src/specsched` and the one-way arrows between them (README, "Architecture").

Read from the source with `ast` (every import, function-level ones included): no module imports
itself back through a cycle, no room imports a room above it, the torch-free core loads without
torch in a fresh interpreter, no file passes 400 lines, and only the K-policy room looks K up.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PKG = "specsched"

# room -> the rooms it may import (besides itself). A room is a subpackage or top-level module.
CORE = {"errors", "io", "schedule", "policy", "corpus"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "io": {"errors"},
    "schedule": {"errors", "io"},
    "policy": {"errors", "schedule"},
    "corpus": {"errors"},
    "planner": {"errors", "io", "schedule", "policy"},
    "engine": {"errors", "io", "schedule", "policy", "corpus"},
    "microbench": {"errors", "io", "engine", "planner"},
    "tune": {"errors", "io", "schedule", "policy", "planner", "engine", "corpus"},
    "bench": {"errors", "io", "schedule", "policy", "planner", "engine", "corpus"},
    "demo": {"errors", "io", "schedule", "policy", "planner", "engine", "bench", "tune"},
    "integrations": {"errors", "io", "schedule", "policy", "planner"},
    "cli": {"errors", "io", "schedule", "policy", "corpus", "planner", "engine", "microbench",
            "tune", "bench", "demo", "integrations"},
    "__main__": {"cli"},
    "__init__": set(),
}
# Modules that must import no torch (the core, the planning math, statistics, torch-free configs).
TORCH_FREE = (
    "specsched.schedule", "specsched.policy", "specsched.planner", "specsched.corpus",
    "specsched.io", "specsched.bench.stats", "specsched.bench.dryrun", "specsched.bench.load",
    "specsched.engine", "specsched.engine.config", "specsched.engine.spec.config",
    "specsched.engine.sampling.params", "specsched.integrations.vllm", "specsched.cli",
)


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted((SRC / PKG).rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Project modules `name` imports (a `from pkg import sub` counts as pkg.sub when sub is a
    module); imports under `if TYPE_CHECKING:` are for the type checker only and skipped."""
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(PKG))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = name.split(".") if is_pkg else name.split(".")[:-1]
                parent = parent[: len(parent) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            if not base.startswith(PKG):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else base)
    return {m for m in found if m in modules and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_no_import_cycles() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10_000))
    try:
        for v in graph:
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(old)  # other tests probe deep-nesting limits
    assert not cycles, f"import cycles: {cycles}"


def test_rooms_import_only_rooms_below_them() -> None:
    bad = []
    for module, targets in _graph().items():
        room = _room(module)
        assert room in ALLOWED, f"{module}: room {room!r} has no entry in ALLOWED"
        for t in targets:
            other = _room(t)
            if other != room and other not in ALLOWED[room]:
                bad.append(f"{module} -> {t}")
    assert not bad, "upward or sideways imports:\n" + "\n".join(sorted(bad))


def test_core_rooms_import_nothing_above_the_core() -> None:
    for room in CORE:
        assert ALLOWED[room] <= CORE, room


def test_torch_free_modules_load_without_torch() -> None:
    code = (
        "import importlib, sys\n"
        f"for m in {TORCH_FREE!r}:\n"
        "    importlib.import_module(m)\n"
        "from specsched.cli import build_parser\n"
        "build_parser()\n"
        "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))\n"
        "assert not bad, bad[:5]\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


def test_no_source_file_over_400_lines() -> None:
    long = {str(p.relative_to(SRC)): n for p in (SRC / PKG).rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 400}
    assert not long, long


# Schedule methods that turn (batch size, context) into K, and the routing functions built on them.
K_LOOKUPS = {"k_for", "k_row", "lookup"}
ROUTING = {"route", "route_per_request"}
# Other objects outside the policy room with a `lookup` of their own: the prefix cache
# (`engine.sched`, `engine.driver`) and the RoPE table (`engine.layers.model`).
OTHER_LOOKUPS = {"pc", "self.rope"}


def _k_lookups(source: str) -> list[str]:
    """Lines (`lineno: what`) of `source` that look K up in a schedule or route a batch."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in K_LOOKUPS | {"route_per_request"}:
            receiver = ast.unparse(node.value)
            if not (node.attr == "lookup" and receiver in OTHER_LOOKUPS):
                found.append(f"{node.lineno}: {receiver}.{node.attr}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "route"):  # `KDecision.route` is a field, never called
            found.append(f"{node.lineno}: {ast.unparse(node.func)}()")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"{PKG}.policy"):
            used = sorted({a.name for a in node.names} & ROUTING)
            if used:
                found.append(f"{node.lineno}: imports {used} from {node.module}")
    return found


def test_only_the_policy_room_looks_k_up() -> None:
    """`Schedule.lookup` / `k_row` / `k_for` and the routing functions are used from
    `specsched.policy` (and the schedule itself) only."""
    callers = [f"{name}:{hit}" for name, path in _modules().items()
               if _room(name) not in ("policy", "schedule")
               for hit in _k_lookups(path.read_text())]
    assert not callers, callers


def test_k_lookup_check_catches_direct_calls() -> None:
    """The check above fails on what a shortcut past the policy would look like."""
    bypasses = [
        "def k(arm, b, c):\n    return arm.policy.schedule.lookup(b, c)[0]\n",
        "def k(s, b, c):\n    return s.lookup(b, c)\n",
        "def k(s, b):\n    return s.k_row(b)\n",
        "def k(s, b, c):\n    return s.k_for(b, c)\n",
        "from specsched.policy import route\n",
        "from specsched.policy.route import route_per_request as per_request\n",
        "import specsched.policy.route as r\nk = r.route(s, [1])\n",
    ]
    for source in bypasses:
        assert _k_lookups(source), source
    assert not _k_lookups("hit = pc.lookup(hashes, n)\nd = decision.route\n")
