"""docs/from-langchain.md runs as written: every code block is executed, the ``# LangChain``
blocks on LangChain + LangGraph, the ``# interlock`` blocks on interlock, ``# both`` blocks on
each side. Blocks that share a name (``# LangChain: seed`` / ``# interlock: seed``) must print
the same thing, and the seed example must differ only in its imports."""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "from-langchain.md"
BLOCK = re.compile(r"```python\n# (LangChain|interlock|both)(?:: (\w+))?\n(.*?)```", re.S)


def blocks() -> list[tuple[str, str | None, str]]:
    text = DOC.read_text()
    found = BLOCK.findall(text)
    assert len(found) == text.count("```python"), "every python block must be labelled"
    return [(side, name or None, code) for side, name, code in found]


def run_side(side: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """Run the blocks of one side in one namespace; returns what each named block printed."""
    work = tmp_path / side
    work.mkdir()
    monkeypatch.chdir(work)
    namespace: dict[str, Any] = {"__name__": "__doc_example__"}
    printed: dict[str, str] = {}
    for block_side, name, code in blocks():
        if block_side not in (side, "both"):
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"{DOC.name}:{block_side}:{name}", "exec"), namespace)
        if name:
            printed[name] = out.getvalue()
    return printed


def test_every_block_runs_and_both_sides_print_the_same(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    # the MCP example starts mcp-server-git from PATH, as installed next to this Python
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    langchain = run_side("LangChain", monkeypatch, tmp_path)
    interlock = run_side("interlock", monkeypatch, tmp_path)
    assert set(langchain) == set(interlock) == {"seed", "models", "guide"}
    assert langchain == interlock
    seed = langchain["seed"].splitlines()
    assert seed[0].startswith("execute_sql {'query': \"DELETE FROM records")
    assert seed[1:] == ["🚨 SQL execution requires DBA approval", "['approve', 'reject']",
                        "Deleted the records older than 30 days."]
    # LangChain's guide code (stream, get_state, LangChain messages) prints the same
    guide = langchain["guide"]
    assert "Interrupt: execute_sql\nTrue 1 True\nai execute_sql True\n" in guide
    assert "Deleted the records older than 30 days." in guide and "Ai Message" in guide


def test_the_seed_example_differs_only_in_imports() -> None:
    seeds = {side: code for side, name, code in blocks() if name == "seed"}

    def body(code: str) -> list[str]:
        return [line for line in code.splitlines()
                if not line.startswith(("from ", "import "))]

    assert body(seeds["LangChain"]) == body(seeds["interlock"])
    assert body(seeds["LangChain"]) and len(seeds["LangChain"].splitlines()) > 30
