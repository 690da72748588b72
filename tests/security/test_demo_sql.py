"""The demo's "is this SQL read-only?" is SQLite's own answer (authorizer and bytecode on a
read-only connection), not text matching: VACUUM, VACUUM INTO and REINDEX pause for review."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from interlock.demo import build_agent, prepare
from interlock.demo.ops import is_read_only


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo-sql")
    prepare(path)
    return path


WRITES = ["VACUUM INTO '{copy}'", "VACUUM", "vacuum main into '{copy}'", "REINDEX",
          "REINDEX orders", "ANALYZE", "DELETE FROM orders", "PRAGMA user_version = 3",
          "ATTACH '{copy}' AS x", "SELECT 1; DELETE FROM orders", "BEGIN", "CREATE TABLE t(a)",
          "WITH x AS (SELECT 1) DELETE FROM orders WHERE id IN x", "not sql at all"]
READS = ["SELECT * FROM orders", "select count(*) from customers where tier = 'gold'",
         "WITH r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r",
         "SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id LIMIT 3"]


def test_sqlite_classifies_statements(demo: Path, tmp_path: Path) -> None:
    copy = tmp_path / "stolen.db"
    db = demo / "sample.db"
    for q in WRITES:
        assert not is_read_only(db, q.format(copy=copy)), q
    for q in READS:
        assert is_read_only(db, q), q
    assert not copy.exists()  # classifying never runs the statement


def test_vacuum_into_pauses_the_demo_agent(demo: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.db"
    agent = build_agent(demo)
    try:
        policy = agent.middleware[0]
        sql = policy.policy["execute_sql"]  # type: ignore[attr-defined]
        assert sql.allow_remember is False
        from interlock.messages import ToolCall

        for q in (f"VACUUM INTO '{copy}'", "REINDEX", "VACUUM"):
            assert sql.when(ToolCall(id="c", name="execute_sql", args={"query": q})) is True
        assert sql.when(ToolCall(id="c", name="execute_sql",
                                 args={"query": "SELECT 1"})) is False
    finally:
        agent.close()
    assert not copy.exists()
    conn = sqlite3.connect(demo / "sample.db")
    try:
        assert conn.execute("SELECT COUNT(*) FROM orders").fetchone()[0] > 0
    finally:
        conn.close()
