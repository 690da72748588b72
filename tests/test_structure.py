"""The package's shape: no import circles anywhere in src/interlock, and the run engine does
not reach back into ``agent.py``.

Every ``import`` / ``from ... import`` counts, wherever it is written (module level, under
``TYPE_CHECKING``, inside a function): a circle through any of them is a circle in the design.
Importing ``a.b.c`` is an edge to ``a.b.c`` only (not to the packages around it).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

import interlock

PACKAGE = Path(interlock.__file__).parent
ENGINE_PACKAGE = "interlock._engine"


def _load_script() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "scripts" / "import_graph.py"
    spec = importlib.util.spec_from_file_location("import_graph", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


import_graph = _load_script()
"""``scripts/import_graph.py``: the graph these tests check is the one it reports."""


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = import_graph.build(import_graph.working_tree())
    assert set(graph) == {_module_name(p) for p in PACKAGE.rglob("*.py")}
    return graph


def _module_name(path: Path) -> str:
    return str(import_graph.module_name(path.relative_to(PACKAGE.parent).as_posix()))


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


def _engine_modules(graph: dict[str, set[str]]) -> list[str]:
    return [m for m in graph if m == ENGINE_PACKAGE or m.startswith(ENGINE_PACKAGE + ".")]


def test_the_engine_is_one_package() -> None:
    graph = _graph()
    engine = _engine_modules(graph)
    assert len(engine) > 10, engine
    # no engine-private module left at the top level: every private top-level module is a
    # shared utility that imports nothing of the engine
    for name in graph:
        if name.count(".") == 1 and name.split(".")[1].startswith("_") and name not in engine:
            assert not any(t in engine for t in graph[name]), name


def test_the_engine_does_not_import_the_agent() -> None:
    graph = _graph()
    for name in _engine_modules(graph):
        assert "interlock.agent" not in graph[name], name


def test_only_the_agent_imports_the_engine() -> None:
    graph = _graph()
    engine = set(_engine_modules(graph))
    importers = {name for name, targets in graph.items()
                 if name not in engine and targets & engine}
    assert importers == {"interlock.agent"}, sorted(importers)


def test_storage_is_the_bottom_layer() -> None:
    """A storage backend needs nothing that ``storage.base`` does not already need: every
    module it imports is part of the storage package or of ``storage.base``'s own closure
    (or a leaf that imports nothing of interlock)."""
    graph = _graph()
    below = import_graph.closure(graph, "interlock.storage.base") | {"interlock.storage.base"}
    for name, targets in graph.items():
        if not name.startswith("interlock.storage"):
            continue
        for t in targets:
            if t.startswith("interlock.storage") or t in below or not graph[t]:
                continue
            raise AssertionError(f"{name} imports {t}, which is above storage.base")


def test_no_import_goes_up_the_layers() -> None:
    """Storage at the bottom, then the core, the engine, the facade and the edges (server,
    CLI, demo): no module imports one of a layer above its own (``scripts/import_graph.py``
    says which module is in which layer)."""
    assert import_graph.upward(_graph()) == []


def test_the_layer_check_sees_an_upward_import() -> None:
    graph = {"interlock.storage.sqlite": {"interlock.authz", "interlock.storage.base"},
             "interlock.storage.base": {"interlock.errors"}, "interlock.errors": set(),
             "interlock.authz": {"interlock.hitl"}, "interlock.hitl": set(),
             "interlock.text": set(), "interlock.server.app": {"interlock.agent"},
             "interlock.agent": {"interlock._engine"}, "interlock._engine": {"interlock.text"}}
    assert import_graph.upward(graph) == [("interlock.storage.sqlite", "interlock.authz")]
    graph["interlock.text"] = {"interlock.server.app"}
    assert ("interlock.text", "interlock.server.app") in import_graph.upward(graph)
    levels = import_graph.levels(graph)
    assert levels["interlock.storage.sqlite"] == 2 and levels["interlock.errors"] == 0


REQUEST_KEYS = {"action_requests", "review_configs"}
"""The keys of a stored review request: read only by ``interlock.review_request``."""


def _request_key_reads(sources: dict[str, str]) -> list[str]:
    """Where a module other than ``review_request`` names a key of the stored review request
    in code (a docstring or comment may mention them)."""
    found = []
    for rel, text in sorted(sources.items()):
        if rel.endswith("review_request.py"):
            continue
        tree = ast.parse(text)
        docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and node.value in REQUEST_KEYS
                    and id(node) not in docstrings):
                found.append(f"{rel}:{node.lineno}")
    return found


def test_only_the_request_module_reads_the_stored_review_request() -> None:
    assert _request_key_reads(import_graph.working_tree()) == []


def test_the_request_key_check_finds_a_dict_read() -> None:
    sources = {"interlock/x.py": 'def f(v):\n    """Reads action_requests."""\n'
                                 '    return v.get("review_configs") or v["action_requests"]\n'}
    assert _request_key_reads(sources) == ["interlock/x.py:3", "interlock/x.py:3"]
