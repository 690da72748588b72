"""SQLite's trigram index is brought up to date after the commits, not inside each of them:
searches stay exact whatever the index holds, and the index catches up once changes stop, at
close, and after a migration."""

from __future__ import annotations

import itertools
import sqlite3
import time
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interlock import ThreadRecord
from interlock.storage import sqlite
from interlock.storage.base import search_key, search_text
from test_storage_conformance import T0, append, create, run

if TYPE_CHECKING:
    from conftest import StoreFactory


def _behind(path: str) -> int:
    """Rows whose text the trigram index does not hold as it is now (read from the file)."""
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT count(*) FROM interlock_threads "
                                "WHERE indexed IS NOT search").fetchone()[0])
    finally:
        conn.close()


def _index_holds(path: str, needle: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute(
            "SELECT count(*) FROM interlock_search WHERE interlock_search MATCH ?",
            (sqlite._phrase(needle),)).fetchone()[0])
    finally:
        conn.close()


def _change(store: sqlite.SqliteCheckpointer, rec: ThreadRecord, preview: str) -> ThreadRecord:
    return run(append(store, rec, preview=preview,
                      updated_at=rec.updated_at + timedelta(seconds=1)))


def _ids(store: sqlite.SqliteCheckpointer, query: str) -> list[str]:
    return [t.thread_id for t in run(store.list_threads(search=query, limit=1000))]


def test_a_commit_leaves_the_index_alone_and_searches_find_the_new_text_only(
        sqlite_stores: StoreFactory) -> None:
    store = sqlite_stores()
    assert isinstance(store, sqlite.SqliteCheckpointer)
    rec = run(create(store, "t1", status="interrupted", preview="drop the orders table"))
    run(create(store, "t2", status="interrupted", preview="nothing to see",
               at=T0 + timedelta(seconds=5)))
    # within REINDEX_EVERY of opening the store, no pass has run: the index is behind
    assert _behind(sqlite_stores.sqlite_path) == 2
    assert _index_holds(sqlite_stores.sqlite_path, "orders") == 0
    assert _ids(store, "orders table") == ["t1"]
    assert run(store.count_threads(search="ORDERS")) == 1

    assert sqlite._reindex(store._connect()) == 0  # a pass: the index holds both rows
    assert _behind(sqlite_stores.sqlite_path) == 0
    assert _index_holds(sqlite_stores.sqlite_path, "orders") == 1

    _change(store, rec, "rename the customers table")
    assert _behind(sqlite_stores.sqlite_path) == 1
    assert _index_holds(sqlite_stores.sqlite_path, "orders") == 1  # the old text, still
    assert _ids(store, "orders") == []
    assert _ids(store, "customers") == ["t1"]
    assert _ids(store, "table") == ["t1"]
    assert run(store.count_threads(search="orders")) == 0


def test_the_index_catches_up_once_changes_stop_and_at_close(
        sqlite_stores: StoreFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite, "REINDEX_EVERY", 0.2)
    monkeypatch.setattr(sqlite, "REINDEX_ROWS", 7)  # several passes for the burst below
    store = sqlite_stores()
    recs = [run(create(store, f"t{i}", status="interrupted", preview=f"request number {i}",
                       at=T0 + timedelta(seconds=i))) for i in range(30)]
    assert _behind(sqlite_stores.sqlite_path) > 0
    give_up = time.monotonic() + 10
    while _behind(sqlite_stores.sqlite_path) and time.monotonic() < give_up:
        time.sleep(0.05)
    assert _behind(sqlite_stores.sqlite_path) == 0
    assert _index_holds(sqlite_stores.sqlite_path, "request number") == 30

    monkeypatch.setattr(sqlite, "REINDEX_EVERY", 3600.0)  # no pass of its own from here on
    _change(store, recs[0], "something else")
    store._next_reindex = time.monotonic() + 3600
    assert _behind(sqlite_stores.sqlite_path) == 1
    run(store.close())
    assert _behind(sqlite_stores.sqlite_path) == 0
    assert _index_holds(sqlite_stores.sqlite_path, "request number") == 29
    assert _index_holds(sqlite_stores.sqlite_path, "something else") == 1


def test_many_rows_behind_are_searched_in_listing_order_exactly(
        sqlite_stores: StoreFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """More rows behind the index than ``FTS_CANDIDATES``: the search reads the listing in
    order, and finds the same threads."""
    store = sqlite_stores()
    for i in range(12):
        run(create(store, f"t{i:02}", status="interrupted", preview=f"row {i % 3}",
                   at=T0 + timedelta(seconds=i)))
    for cap in (5, 2000):
        monkeypatch.setattr(sqlite, "FTS_CANDIDATES", cap)
        assert _ids(store, "row 1") == ["t10", "t07", "t04", "t01"]
        assert run(store.count_threads(search="ROW 2")) == 4


def test_a_deleted_thread_leaves_nothing_in_the_index(sqlite_stores: StoreFactory) -> None:
    store = sqlite_stores()
    assert isinstance(store, sqlite.SqliteCheckpointer)
    run(create(store, "gone", preview="unique words here"))
    run(create(store, "kept", preview="other words"))
    sqlite._reindex(store._connect())
    assert _index_holds(sqlite_stores.sqlite_path, "unique words") == 1
    conn = sqlite3.connect(sqlite_stores.sqlite_path)
    conn.execute("DELETE FROM interlock_threads WHERE thread_id='gone'")
    conn.commit()
    conn.close()
    assert _index_holds(sqlite_stores.sqlite_path, "unique words") == 0
    assert _ids(store, "words") == ["kept"]


def test_a_version_6_file_keeps_its_index_and_drops_the_triggers(tmp_path: Path) -> None:
    path = str(tmp_path / "v6.db")
    conn = sqlite3.connect(path)
    for script in sqlite.MIGRATIONS[:6]:
        conn.executescript(script)
    conn.execute("CREATE TABLE interlock_meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.execute("INSERT INTO interlock_meta VALUES ('schema_version', '6')")
    conn.commit()
    for stmt in sqlite.SEARCH_INDEX:
        conn.execute(stmt)
    rec = ThreadRecord(thread_id="old", status="interrupted", version=1, created_at=T0,
                       updated_at=T0, preview="Archive the invoices")
    conn.execute("INSERT INTO interlock_threads (thread_id, status, version, updated_at, data, "
                 "change_seq, search, search_id) VALUES (?, ?, 1, ?, ?, 1, ?, 1)",
                 ("old", rec.status, T0.isoformat(), rec.model_dump_json(), search_text(rec)))
    conn.commit()
    conn.close()
    assert _index_holds(path, "invoices") == 1  # the old trigger indexed it

    store = sqlite.SqliteCheckpointer(path)
    try:
        assert store.schema_version() == sqlite.SCHEMA_VERSION
        assert _behind(path) == 0
        conn = sqlite3.connect(path)
        triggers = {r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='trigger'")}
        conn.close()
        assert triggers == {"interlock_search_delete"}
        assert _ids(store, "invoices") == ["old"]
        _change(store, rec, "Archive the receipts")
        assert _index_holds(path, "receipts") == 0  # no trigger indexed the change
        assert _ids(store, "receipts") == ["old"]
        assert _ids(store, "invoices") == []
    finally:
        run(store.close())
    assert _index_holds(path, "receipts") == 1


TEXT = st.text(alphabet="abcAB é", min_size=0, max_size=12)


def test_searches_are_exact_whatever_the_index_has_taken(
        sqlite_stores: StoreFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads created and changed at random, with passes of a few rows in between: every
    search lists and counts exactly the threads whose current text holds the query (what the
    memory store does), with the candidates from the index and with the scan."""
    monkeypatch.setattr(sqlite, "REINDEX_EVERY", 3600.0)  # passes only where the test runs one
    store = sqlite_stores()
    assert isinstance(store, sqlite.SqliteCheckpointer)
    stored: dict[str, ThreadRecord] = {}
    n = itertools.count()

    @settings(max_examples=40, deadline=None, derandomize=True)
    @given(steps=st.lists(st.tuples(st.sampled_from(["new", "change", "pass"]), TEXT,
                                    st.integers(0, 50)), min_size=1, max_size=8),
           query=TEXT, cap=st.sampled_from([1, 2000]))
    def check(steps: list[tuple[str, str, int]], query: str, cap: int) -> None:
        monkeypatch.setattr(sqlite, "FTS_CANDIDATES", cap)
        for op, text, k in steps:
            if op == "new" or not stored:
                tid = f"s{next(n)}"
                stored[tid] = run(create(store, tid, preview=text,
                                         at=T0 + timedelta(seconds=len(stored))))
            elif op == "change":
                tid = sorted(stored)[k % len(stored)]
                stored[tid] = _change(store, stored[tid], text)
            else:
                with store._lock:
                    sqlite._reindex(store._connect(), limit=1 + k % 3)
        needle = search_key(query)
        want = sorted((t for t in stored.values() if needle in search_text(t)),
                      key=lambda t: (t.updated_at, t.thread_id), reverse=True)
        assert _ids(store, query) == [t.thread_id for t in want]
        assert run(store.count_threads(search=query)) == len(want)

    check()


def test_a_store_that_only_reads_takes_up_what_another_process_left(
        sqlite_stores: StoreFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows left behind the index by a process that stopped without closing its store: the
    next process to open the file brings the index up to date, even if it only reads."""
    monkeypatch.setattr(sqlite, "REINDEX_EVERY", 0.2)
    writer = sqlite_stores()
    for i in range(5):
        run(create(writer, f"t{i}", preview=f"left behind {i}", at=T0 + timedelta(seconds=i)))
    conn = sqlite3.connect(sqlite_stores.sqlite_path)
    conn.execute("UPDATE interlock_threads SET indexed = NULL")  # as if no pass had run
    conn.execute("INSERT INTO interlock_search (interlock_search) VALUES ('delete-all')")
    conn.commit()
    conn.close()
    assert _behind(sqlite_stores.sqlite_path) == 5

    reader = sqlite.SqliteCheckpointer(sqlite_stores.sqlite_path)
    try:
        assert _ids(reader, "left behind 3") == ["t3"]  # exact while the index is behind
        give_up = time.monotonic() + 10
        while _behind(sqlite_stores.sqlite_path) and time.monotonic() < give_up:
            time.sleep(0.05)
        assert _behind(sqlite_stores.sqlite_path) == 0
        assert _index_holds(sqlite_stores.sqlite_path, "left behind") == 5
    finally:
        run(reader.close())


_PASSES = """
import sqlite3, sys, time
from interlock.storage import sqlite
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("PRAGMA journal_mode=WAL")
print("ready", flush=True)
while sqlite._reindex(conn, limit=int(sys.argv[2])):
    time.sleep(float(sys.argv[3]))
print("done", flush=True)
"""


@pytest.mark.slow
def test_passes_in_another_process_killed_mid_way_leave_searches_exact(
        sqlite_stores: StoreFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process brings the index up to date while this one searches, and is killed
    (SIGKILL) part-way through: every search meanwhile finds exactly the threads whose text
    holds the query, a killed pass leaves nothing half-done, and a later pass finishes the
    index with each thread's text in it once."""
    import subprocess
    import sys

    monkeypatch.setattr(sqlite, "REINDEX_EVERY", 3600.0)  # this process runs no pass
    store = sqlite_stores()
    assert isinstance(store, sqlite.SqliteCheckpointer)
    recs = [run(create(store, f"t{i:03}", preview=f"word{i % 7} item {i}",
                       at=T0 + timedelta(seconds=i))) for i in range(300)]
    sqlite._reindex(store._connect(), limit=1000)
    for i, rec in enumerate(recs):  # every text changes: the index holds the old ones
        _change(store, rec, f"word{(i + 3) % 7} changed {i}")
    assert _behind(sqlite_stores.sqlite_path) == 300
    want = {q: [f"t{i:03}" for i in reversed(range(300)) if f"word{(i + 3) % 7} " in
                f"word{(i + 3) % 7} changed {i}" and (i + 3) % 7 == int(q[-1])]
            for q in ("word2", "word5")}

    for kill_after in (0.05, 0.2):
        child = subprocess.Popen([sys.executable, "-c", _PASSES, sqlite_stores.sqlite_path,
                                  "1", "0.003"], stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        give_up = time.monotonic() + kill_after
        while time.monotonic() < give_up:
            for q, ids in want.items():
                assert _ids(store, q) == ids
                assert run(store.count_threads(search=q)) == len(ids)
            assert _ids(store, "item") == []  # only the old texts said "item"
        child.kill()
        child.wait(timeout=30)
    behind = _behind(sqlite_stores.sqlite_path)
    assert 0 < behind < 300  # the passes got some way, not all of it
    for q, ids in want.items():
        assert _ids(store, q) == ids

    done = subprocess.run([sys.executable, "-c", _PASSES, sqlite_stores.sqlite_path, "50",
                           "0"],
                          capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["ready", "done"]
    assert _behind(sqlite_stores.sqlite_path) == 0
    for i in range(300):
        assert _index_holds(sqlite_stores.sqlite_path, f"changed {i}") == 1 + sum(
            1 for j in range(300) if j != i and f"changed {i}" in f"changed {j}")
    assert _index_holds(sqlite_stores.sqlite_path, "item") == 0
    for q, ids in want.items():
        assert _ids(store, q) == ids


def test_a_pass_does_not_hold_up_the_store_behind_another_process_write(
        sqlite_stores: StoreFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """While another connection holds the write lock, a due pass gives up after
    ``REINDEX_WAIT_MS`` instead of the store's busy timeout, so the loads queued behind it on
    the store's connection are answered at once; the index catches up once the lock is gone."""
    monkeypatch.setattr(sqlite, "REINDEX_EVERY", 0.1)
    store = sqlite_stores()
    assert isinstance(store, sqlite.SqliteCheckpointer)
    run(create(store, "t1", preview="first words"))
    other = sqlite3.connect(sqlite_stores.sqlite_path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another process's long write
        store._unindexed, store._next_reindex = True, 0.0
        store._arm()
        # the pass is due and tries while the lock is held: it gave up once it set the time
        # of the next one (the test set it to 0)
        give_up = time.monotonic() + 60
        while store._next_reindex == 0.0 and time.monotonic() < give_up:
            time.sleep(0.01)
        assert store._next_reindex > 0.0, "no pass was tried"
        t0 = time.monotonic()
        for _ in range(5):
            snap = run(store.load("t1"))
            assert snap is not None
        # a call queued behind a pass that waited for the store's busy timeout would take
        # 30 s; half of it leaves room for any load on the machine
        assert time.monotonic() - t0 < 15.0
        assert _ids(store, "first words") == ["t1"]
    finally:
        other.execute("ROLLBACK")
        other.close()
    give_up = time.monotonic() + 10
    while _behind(sqlite_stores.sqlite_path) and time.monotonic() < give_up:
        time.sleep(0.05)
    assert _behind(sqlite_stores.sqlite_path) == 0
