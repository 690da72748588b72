"""Conformance of the change feed (``Checkpointer.changes``) and of the deadline index
(``Checkpointer.due``) on every backend: what background work reads instead of scanning."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from interlock import Checkpointer, Interrupt, ThreadRecord
from interlock.storage.base import ChangeCursor, Commit
from test_storage_conformance import T0, append, create, run, thread

if TYPE_CHECKING:
    from conftest import StoreFactory


async def drain(store: Checkpointer, cursor: ChangeCursor, *, limit: int = 500,
                expect: int = 0, settle: bool = False) -> tuple[list[ThreadRecord], ChangeCursor]:
    """Read the feed until it is empty and at least ``expect`` rows came back (with
    ``settle``: and nothing is held back). (On Postgres the feed holds back rows newer than
    any transaction still running on the server — e.g. another test's — so rows may arrive a
    little later.)"""
    seen: list[ThreadRecord] = []
    for _ in range(400):
        page = await store.changes(after=cursor, limit=limit)
        seen += page.threads
        cursor = page.cursor
        if not page.threads:
            if len(seen) >= expect and not (settle and page.held):
                return seen, cursor
            await asyncio.sleep(0.025)
    raise AssertionError(f"the feed returned {len(seen)} of {expect} rows")


def review(iid: str, expires_at: Any) -> Interrupt:
    configs = [{"action_name": "drop", "allowed_decisions": ["approve"],
                "expires_at": None if expires_at is None else expires_at.isoformat()}]
    return Interrupt(id=iid, kind="review", created_at=T0,
                     value={"action_requests": [], "review_configs": configs})


def test_feed_starts_now_and_returns_changes_in_commit_order(stores: StoreFactory) -> None:
    store = stores()
    run(create(store, "before"))
    start = run(store.changes(after=None))
    assert start.threads == []
    a = run(create(store, "a"))
    run(create(store, "b"))
    a2 = run(append(store, a, status="interrupted"))
    seen, cursor = run(drain(store, start.cursor, expect=2))
    # "a" changed twice and comes back once, at its latest version, in the place of its
    # latest change. "before" was committed before the cursor; Postgres may still return it
    # (a feed that starts "now" errs on the side of repeating, never of skipping: rows newer
    # than the oldest transaction still running on the server are read again)
    assert [(t.thread_id, t.version, t.status) for t in seen if t.thread_id != "before"] == [
        ("b", 1, "idle"), ("a", 2, "interrupted")]
    if stores.kind != "postgres":
        assert "before" not in [t.thread_id for t in seen]
    again = run(store.changes(after=cursor))
    assert again.threads == []
    run(append(store, a2, status="completed"))
    seen, _ = run(drain(store, cursor, expect=1))
    assert [(t.thread_id, t.version) for t in seen] == [("a", 3)]


def test_feed_pages_without_losing_or_repeating_rows(stores: StoreFactory) -> None:
    store = stores()
    start = run(store.changes(after=None)).cursor
    for i in range(23):
        run(create(store, f"t{i:02d}"))
    seen, _ = run(drain(store, start, limit=5, expect=23))
    assert [t.thread_id for t in seen] == [f"t{i:02d}" for i in range(23)]


def test_feed_sees_every_final_version_under_concurrent_commits(stores: StoreFactory) -> None:
    """Writers on separate instances (connections) commit while a reader follows the feed:
    the reader ends with every thread at its final version."""
    writers = [stores() for _ in range(4)]
    reader = stores() if stores.durable else writers[0]
    cursor = run(reader.changes(after=None)).cursor
    latest: dict[str, int] = {}
    done = threading.Event()
    errors: list[BaseException] = []

    def write(k: int) -> None:
        try:
            async def go() -> None:
                store = writers[k]
                for i in range(10):
                    rec = await create(store, f"w{k}-{i}")
                    for _ in range(2):
                        rec = await append(store, rec)
            asyncio.run(go())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def follow() -> None:
        nonlocal cursor

        async def go() -> None:
            nonlocal cursor
            while True:
                finished = done.is_set()
                page = await reader.changes(after=cursor, limit=7)
                for t in page.threads:
                    assert t.version >= latest.get(t.thread_id, 0)
                    latest[t.thread_id] = t.version
                cursor = page.cursor
                complete = len(latest) == 40 and set(latest.values()) == {3}
                if finished and not page.threads and complete:
                    return
                await asyncio.sleep(0.001 if not finished else 0.02)
        asyncio.run(go())

    threads = [threading.Thread(target=write, args=(k,)) for k in range(4)]
    watcher = threading.Thread(target=follow)
    watcher.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    watcher.join(timeout=60)
    assert not errors
    assert latest == {f"w{k}-{i}": 3 for k in range(4) for i in range(10)}


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_postgres_feed_waits_for_a_transaction_that_commits_late(stores: StoreFactory) -> None:
    """A transaction that began before a later one and commits after it must not be skipped:
    the feed holds back rows newer than the oldest running transaction."""
    import psycopg

    from conftest import PG_DSN

    store = stores()
    slow = run(create(store, "slow"))
    cursor = run(store.changes(after=None)).cursor
    # read until nothing is held back: another test's transaction, open when the cursor was
    # taken, may have kept "slow" above it (then it arrives here, at version 1)
    early, cursor = run(drain(store, cursor, settle=True))
    assert all(t.thread_id == "slow" and t.version == 1 for t in early)
    with psycopg.connect(PG_DSN, options=f"-c search_path={stores.pg_schema}") as conn:
        # an open transaction that has written the "slow" thread (as a commit would)
        conn.execute("UPDATE interlock_threads SET version = 2, change_xid = "
                     "pg_current_xact_id() WHERE thread_id = 'slow'")
        run(create(store, "fast"))  # starts and commits later, with a larger id
        page = run(store.changes(after=cursor))
        assert page.threads == []  # held back: "slow" may still commit with a smaller id
        conn.commit()
    seen, _ = run(drain(store, page.cursor, expect=2))
    assert sorted(t.thread_id for t in seen) == ["fast", "slow"]
    assert slow.version == 1


def test_due_reads_pending_deadlines_only(stores: StoreFactory) -> None:
    store = stores()
    now = T0 + timedelta(hours=1)
    early = run(create(store, "early", status="interrupted",
                       pending=[review("i1", now - timedelta(minutes=5))]))
    run(create(store, "later", status="interrupted",
               pending=[review("i2", now + timedelta(minutes=5))]))
    run(create(store, "both", status="interrupted",
               pending=[review("i3", now + timedelta(days=1)), review("i4", now - timedelta(minutes=9))]))
    run(create(store, "none", status="interrupted", pending=[review("i5", None)]))
    run(create(store, "question", status="interrupted",
               pending=[Interrupt(id="q", kind="input", value="how much?", created_at=T0)]))
    assert run(store.due(now=now)) == ["both", "early"]
    assert run(store.due(now=now, limit=1)) == ["both"]
    assert run(store.due(now=now + timedelta(minutes=6))) == ["both", "early", "later"]
    run(append(store, early, status="running", pending=[]))
    assert run(store.due(now=now)) == ["both"]


def test_due_survives_reopen(stores: StoreFactory) -> None:
    if not stores.durable:
        pytest.skip("memory storage does not survive its process")
    store = stores()
    run(create(store, "t", status="interrupted", pending=[review("i", T0)]))
    run(store.close())
    assert run(stores().due(now=T0)) == ["t"]


def test_sqlite_migration_to_v2_backfills_the_feed_and_deadlines(
        sqlite_stores: StoreFactory) -> None:
    """A file written by schema version 1 is upgraded in place: its rows get feed positions
    and paused threads their deadlines."""
    from interlock.storage.base import thread_json
    from interlock.storage.sqlite import MIGRATIONS

    path = sqlite_stores.sqlite_path
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[0])
    conn.execute("CREATE TABLE interlock_meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.execute("INSERT INTO interlock_meta VALUES ('schema_version', '1')")
    old = thread("old", 1, status="interrupted", pending=[review("i", T0)])
    conn.execute("INSERT INTO interlock_threads (thread_id, status, version, updated_at, data) "
                 "VALUES (?, ?, ?, ?, ?)", ("old", "interrupted", 1, T0.isoformat(),
                                            thread_json(old)))
    conn.commit()
    conn.close()
    store = sqlite_stores()
    assert run(store.due(now=T0)) == ["old"]
    seen, _ = run(drain(store, (0, ""), expect=1))
    assert [t.thread_id for t in seen] == ["old"]
    cursor = run(store.changes(after=None)).cursor
    run(store.commit(Commit(thread=old.model_copy(update={"version": 2, "pending": []})),
                     expected_version=1))
    seen, _ = run(drain(store, cursor, expect=1))
    assert [(t.thread_id, t.version) for t in seen] == [("old", 2)]
    assert run(store.due(now=T0)) == []
