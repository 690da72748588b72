"""Helpers for the CLI tests: a prepared demo data directory, subprocess environments, one
edit in ``interlock review`` in a pseudo-terminal."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from interlock.demo import build_agent, prepare, queue_runs

SRC = Path(__file__).resolve().parents[2] / "src"


def demo_dir(path: Path) -> Path:
    """A fresh demo data directory whose four runs wait for a reviewer."""
    prepare(path)
    agent = build_agent(path)
    try:
        results = queue_runs(agent)
    finally:
        agent.close()
    assert [r.status for r in results] == ["interrupted"] * 4
    return path


def db_url(path: Path) -> str:
    return f"sqlite:///{path / 'interlock.db'}"


def sample_rows(path: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path / "sample.db")
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a CLI subprocess: this interpreter's packages, no interlock settings
    leaking in from the developer's shell (but the test run's audit key)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("INTERLOCK_") or k.startswith("INTERLOCK_AUDIT_KEY")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def cli_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "interlock.cli", *args]


def edit_once_in_review(tmp_path: Path, agent_source: str, editor_source: str, message: str,
                        sent: str, **env: str) -> str:
    """Write ``agent_source`` as module ``edit_agent`` (its ``agent`` reads its settings from
    ``env``) and pause its thread ``t`` with ``message``; then, in ``interlock review`` in a
    pseudo-terminal, edit the call once with ``editor_source`` as ``$EDITOR`` and send the
    edit, waiting for ``sent`` on screen. Returns what the review showed before sending (the
    diff of the edit)."""
    import pexpect

    (tmp_path / "edit_agent.py").write_text(agent_source)
    editor = tmp_path / "editor.py"
    editor.write_text(editor_source)
    environ = child_env(PYTHONPATH=f"{tmp_path}:{child_env()['PYTHONPATH']}", TERM="dumb",
                        COLUMNS="100", EDITOR=f"{sys.executable} {editor}", **env)
    made = subprocess.run(
        [sys.executable, "-c", "import sys, edit_agent; "
         "print(edit_agent.agent.invoke(sys.argv[1], thread_id='t').status)", message],
        env=environ, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert made.stdout.strip() == "interrupted", made.stderr
    argv = cli_argv("review", "--agent", "edit_agent:agent", "--reviewer", "bob",
                    "--thread", "t")
    child = pexpect.spawn(argv[0], argv[1:], env=environ, encoding="utf-8", timeout=60,
                          dimensions=(50, 100), cwd=str(tmp_path))
    try:
        child.expect(r"\[q\] quit\s*\r?\n> ")
        child.send("e")
        child.expect(r"\[y\] send this edit\s+\[e\] edit again\s+\[n\] discard the edit")
        diff = str(child.before)
        child.expect("> ")
        child.send("y")
        child.expect(sent)
        child.expect(pexpect.EOF)
    finally:
        child.close()
    return diff
