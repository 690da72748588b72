"""Helpers for the CLI tests: a prepared demo data directory, subprocess environments."""

from __future__ import annotations

import os
import sqlite3
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
