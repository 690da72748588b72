"""The import graph of the interlock package, in figures.

    python scripts/import_graph.py            # the working tree (src/interlock)
    python scripts/import_graph.py REV        # any commit, read from git (e.g. a871a8a~1)
    python scripts/import_graph.py --edges    # also list every upward edge and the longest
                                              # chain of imports

Prints the number of modules (files), import edges between them, levels (the longest chain of
imports: a module that imports nothing of interlock is on level 0, any other one level above
the highest module it imports) and the upward edges: imports that go against the layers
(storage at the bottom, then the core, the engine, the ``Agent`` facade, and the edges —
server, CLI, demo — on top; see ``layer``).

Every ``import`` / ``from ... import`` counts, wherever it is written (module level, under
``TYPE_CHECKING``, inside a function). Importing ``a.b.c`` is an edge to ``a.b.c`` only, not
to the packages around it. ``tests/test_structure.py`` checks the package with the same graph.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "interlock"

Graph = dict[str, set[str]]


def module_name(rel: str) -> str:
    """``interlock/storage/base.py`` -> ``interlock.storage.base`` (a package: its name)."""
    parts = rel.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def build(sources: dict[str, str]) -> Graph:
    """The graph of modules given as ``{path relative to src: source text}``."""
    modules = {module_name(rel): rel for rel in sources}
    graph: Graph = {m: set() for m in modules}
    for name, rel in modules.items():
        is_pkg = rel.endswith("__init__.py")
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        for node in ast.walk(ast.parse(sources[rel])):
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


def working_tree() -> dict[str, str]:
    src = ROOT / "src"
    return {p.relative_to(src).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted((src / PACKAGE).rglob("*.py"))}


def at_commit(rev: str) -> dict[str, str]:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], check=True,
                              capture_output=True, text=True).stdout

    paths = [p for p in git("ls-tree", "-r", "--name-only", rev, f"src/{PACKAGE}").split()
             if p.endswith(".py")]
    return {p.removeprefix("src/"): git("show", f"{rev}:{p}") for p in paths}


def closure(graph: Graph, start: str) -> set[str]:
    """Every module ``start`` imports, directly or not."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def levels(graph: Graph) -> dict[str, int]:
    """Each module's level: 0 when it imports nothing of the package, else one above the
    highest module it imports (a circle, should there be one, counts as one module)."""
    level: dict[str, int] = {}
    active: set[str] = set()

    def visit(m: str) -> int:
        if m in level:
            return level[m]
        active.add(m)
        below = [visit(t) for t in graph[m] if t not in active]
        active.discard(m)
        level[m] = 1 + max(below) if below else 0
        return level[m]

    for m in sorted(graph):
        visit(m)
    return level


EDGE_PACKAGES = ("server", "cli", "demo")
FACADE = ("agent", "inputs", "worker", "compat", "subagent_tree")
"""``Agent``, the parsing of what its methods are given, the modules built on it (the worker,
the LangChain-compatible surface, the sub-agent tree), and the package's ``__init__``."""


def layer(module: str) -> int:
    """0 storage, 1 the core (concepts, models, notify, integrations, audit), 2 the engine,
    3 the ``Agent`` facade, 4 the edges (server, CLI, demo)."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    if top == "storage":
        return 0
    if top in EDGE_PACKAGES:
        return 4
    if top in FACADE or module == PACKAGE:
        return 3
    if top == "_engine" or top in ENGINE_MODULES_BEFORE:
        return 2
    return 1


ENGINE_MODULES_BEFORE = {
    "_perform", "_txn", "_deps", "_loop", "_decide", "_execute", "_delegate", "_subagents",
    "_snapshots", "_notices", "_summary", "_texts", "_models", "_quorum"}
"""The engine's modules before they moved into ``interlock._engine`` (commit a871a8a)."""


def upward(graph: Graph) -> list[tuple[str, str]]:
    """Imports against the layers: a module importing one of a higher layer. Storage may
    use what ``storage.base`` itself needs (the records it stores: messages, interrupts,
    outbox, errors) and modules that import nothing of interlock; anything else it imports
    from above is an upward edge."""
    base = f"{PACKAGE}.storage.base"
    below_base = closure(graph, base) if base in graph else set()
    found = []
    for a in sorted(graph):
        for b in sorted(graph[a]):
            if layer(a) == 0 and layer(b) > 0:
                if b in below_base or not graph[b]:
                    continue
                found.append((a, b))
            elif layer(a) > 0 and layer(b) > layer(a):
                found.append((a, b))
    return found


def main(argv: list[str]) -> None:
    show = "--edges" in argv
    revs = [a for a in argv if not a.startswith("--")]
    sources = at_commit(revs[0]) if revs else working_tree()
    graph = build(sources)
    lv = levels(graph)
    up = upward(graph)
    print(f"{'commit ' + revs[0] if revs else 'working tree'}: {len(graph)} files, "
          f"{max(lv.values()) + 1} levels, {sum(len(t) for t in graph.values())} edges, "
          f"{len(up)} upward edges")
    if show:
        for a, b in up:
            print(f"  upward: {a} -> {b}")
        print("  longest chain: " + " -> ".join(longest_chain(graph, lv)))


def longest_chain(graph: Graph, lv: dict[str, int]) -> list[str]:
    """A chain of imports as long as the graph has levels, from the top down."""
    m = max(sorted(lv), key=lambda k: lv[k])
    chain = [m]
    while lv[m] > 0:
        m = next(t for t in sorted(graph[m]) if lv[t] == lv[m] - 1)
        chain.append(m)
    return chain


if __name__ == "__main__":
    main(sys.argv[1:])
