"""Direct access to the stored rows, as someone with write access to the database has it."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from conftest import PG_DSN, StoreFactory
from interlock.audit import AuditKey, rehash
from interlock.storage.base import AuditRecord


@pytest.fixture
def db(durable_stores: StoreFactory) -> StoreFactory:
    """A database someone can also open directly: SQLite and Postgres."""
    return durable_stores


TABLES = ("interlock_threads", "interlock_messages", "interlock_journal", "interlock_audit")


class Tables:
    def __init__(self, factory: StoreFactory) -> None:
        assert factory.kind in ("sqlite", "postgres")
        self.f = factory

    @contextmanager
    def _conn(self) -> Iterator[Any]:
        if self.f.kind == "sqlite":
            conn = sqlite3.connect(self.f.sqlite_path, isolation_level=None)
            try:
                yield conn
            finally:
                conn.close()
        else:
            import psycopg

            with psycopg.connect(PG_DSN, autocommit=True) as conn:
                conn.execute(f'SET search_path TO "{self.f.pg_schema}"')
                yield conn

    def _sql(self, text: str) -> str:
        return text if self.f.kind == "sqlite" else text.replace("?", "%s")

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with self._conn() as c:
            return [tuple(r) for r in c.execute(self._sql(sql), params).fetchall()]

    def execute(self, sql: str, *params: Any) -> None:
        with self._conn() as c:
            c.execute(self._sql(sql), params)

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every interlock table (to show that nothing changed), without the
        column in which SQLite's search index notes what it holds of a row: the store's own
        index passes write it on a timer of their own (``SqliteCheckpointer._reindex``)."""
        return {t: sorted(self._rows(t), key=repr) for t in TABLES}

    def _rows(self, table: str) -> list[tuple[Any, ...]]:
        with self._conn() as c:
            cur = c.execute(f"SELECT * FROM {table}")
            keep = [i for i, d in enumerate(cur.description) if d[0] != "indexed"]
            return [tuple(r[i] for i in keep) for r in cur.fetchall()]

    # -- audit rows

    def audit(self, thread_id: str) -> list[tuple[int, dict[str, Any]]]:
        rows = self.query("SELECT id, data FROM interlock_audit WHERE thread_id=? ORDER BY seq",
                          thread_id)
        return [(int(i), json.loads(d)) for i, d in rows]

    def set_audit(self, row_id: int, data: dict[str, Any]) -> None:
        self.execute("UPDATE interlock_audit SET data=? WHERE id=?", json.dumps(data), row_id)

    def thread(self, thread_id: str) -> dict[str, Any]:
        (raw,), = self.query("SELECT data FROM interlock_threads WHERE thread_id=?", thread_id)
        return dict(json.loads(raw))

    def set_thread(self, thread_id: str, data: dict[str, Any]) -> None:
        self.execute("UPDATE interlock_threads SET data=? WHERE thread_id=?", json.dumps(data),
                     thread_id)

    def forge(self, thread_id: str, seq: int, change: dict[str, Any],
              key: AuditKey | None) -> None:
        """Rewrite row ``seq``'s data, then recompute its hash, every later hash and the head
        in the thread row — signing with ``key`` (a key the forger made up) or, with None,
        writing unsigned rows (plain SHA-256)."""
        prev: str | None = None
        for row_id, data in self.audit(thread_id):
            if data["seq"] < seq:
                prev = data["hash"]
                continue
            if data["seq"] == seq:
                data["data"].update(change)
            if prev is not None:
                data["prev_hash"] = prev
            if key is None:  # the public key id is kept, so the row looks signed
                data["key_id"] = None
            data["hash"] = rehash(AuditRecord.model_validate(data), key)
            prev = data["hash"]
            self.set_audit(row_id, data)
        head = self.thread(thread_id)
        head["audit_hash"] = prev
        self.set_thread(thread_id, head)

    # -- journal and messages

    def journal(self, thread_id: str, call_id: str) -> dict[str, Any]:
        (raw,), = self.query("SELECT data FROM interlock_journal WHERE thread_id=? AND "
                             "tool_call_id=?", thread_id, call_id)
        return dict(json.loads(raw))

    def set_journal(self, thread_id: str, call_id: str, data: dict[str, Any]) -> None:
        self.execute("UPDATE interlock_journal SET data=? WHERE thread_id=? AND tool_call_id=?",
                     json.dumps(data), thread_id, call_id)

    def messages(self, thread_id: str) -> list[tuple[int, dict[str, Any]]]:
        rows = self.query("SELECT seq, data FROM interlock_messages WHERE thread_id=? "
                          "ORDER BY seq", thread_id)
        return [(int(s), json.loads(d)) for s, d in rows]

    def set_message(self, thread_id: str, seq: int, data: dict[str, Any]) -> None:
        self.execute("UPDATE interlock_messages SET data=? WHERE thread_id=? AND seq=?",
                     json.dumps(data), thread_id, seq)
