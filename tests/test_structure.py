"""The package's shape: no import circles anywhere in src/interlock, and the run engine does
not reach back into ``agent.py``.

Every ``import`` / ``from ... import`` counts, wherever it is written (module level, under
``TYPE_CHECKING``, inside a function): a circle through any of them is a circle in the design.
Importing ``a.b.c`` is an edge to ``a.b.c`` only (not to the packages around it).
"""

from __future__ import annotations

import ast
from pathlib import Path

import interlock

PACKAGE = Path(interlock.__file__).parent
ENGINE = ("_engine", "_loop", "_txn", "_decide", "_execute", "_deps", "_texts", "leases",
          "paging")


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = base[: len(base) - node.level + 1]
                    mod = ".".join(anchor + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                # `from . import x` / `from .pkg import sub` names submodules: an edge to
                # each of them; any other name is an edge to the module itself
                subs = [f"{mod}.{a.name}" for a in node.names]
                targets = [t for t in subs if t in modules]
                if len(targets) < len(subs):
                    targets.append(mod)
            for t in targets:
                if t in modules and t != name:
                    graph[name].add(t)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_real_imports() -> None:
    graph = _graph()
    assert "interlock._engine" in graph["interlock.agent"]
    assert "interlock.storage.base" in graph["interlock.storage.sqlite"]
    assert "interlock.server.runner" in graph["interlock.server.app"]


def test_no_import_circles_in_the_package() -> None:
    cycles = _cycles(_graph())
    assert cycles == [], "import circles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_engine_does_not_import_the_agent() -> None:
    graph = _graph()
    for name in ENGINE:
        assert "interlock.agent" not in graph[f"interlock.{name}"], name
