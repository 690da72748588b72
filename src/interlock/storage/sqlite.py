"""SQLite checkpointer: the embedded durable default (stdlib ``sqlite3``, WAL, fsync on commit)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic_core import to_jsonable_python

from .._offload import BLOCKING_CALLER, offload
from ..errors import ConfigurationError, StorageError
from ..messages import message_to_json, messages_from_json
from ..outbox import OutboxEvent, outbox_json
from .base import (
    AuditRecord,
    ChangeCursor,
    ChangePage,
    Commit,
    JournalEntry,
    ReadKeys,
    ThreadRecord,
    ThreadSnapshot,
    VersionConflict,
    audit_rows,
    journal_json,
    metadata_contains,
    needs_sweep,
    readers_of,
    refuse_enqueue,
    review_deadline,
    search_key,
    search_text,
    stored_audit,
    thread_json,
    ts_key,
)

T = TypeVar("T")
log = logging.getLogger("interlock.storage.sqlite")

# Ordered migrations; index + 1 is the schema version they produce.
# Messages and journal rows are often larger than 1 KB: they live in ordinary rowid tables,
# where such rows fit in a page (a WITHOUT ROWID table spills each of them to an overflow
# page, which doubled the file). Files created with the earlier layout work unchanged.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE IF NOT EXISTS interlock_threads (
        thread_id  TEXT PRIMARY KEY,
        status     TEXT NOT NULL,
        version    INTEGER NOT NULL,
        updated_at TEXT NOT NULL,
        data       TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS interlock_threads_status
        ON interlock_threads (status, updated_at);
    CREATE INDEX IF NOT EXISTS interlock_threads_updated ON interlock_threads (updated_at);
    CREATE TABLE IF NOT EXISTS interlock_messages (
        thread_id TEXT NOT NULL,
        seq       INTEGER NOT NULL,
        data      TEXT NOT NULL,
        PRIMARY KEY (thread_id, seq)
    );
    CREATE TABLE IF NOT EXISTS interlock_journal (
        thread_id    TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        turn         INTEGER NOT NULL,
        position     INTEGER NOT NULL,
        state        TEXT NOT NULL,
        data         TEXT NOT NULL,
        PRIMARY KEY (thread_id, tool_call_id)
    );
    CREATE INDEX IF NOT EXISTS interlock_journal_turn ON interlock_journal (thread_id, turn);
    CREATE TABLE IF NOT EXISTS interlock_audit (
        id        INTEGER PRIMARY KEY AUTOINCREMENT,
        thread_id TEXT NOT NULL,
        seq       INTEGER NOT NULL,
        data      TEXT NOT NULL,
        UNIQUE (thread_id, seq)
    );
    """,
    # 2: the change feed (a position per thread row, in commit order: writes are serialised)
    # and the deadline of the earliest pending review call, both indexed
    """
    ALTER TABLE interlock_threads ADD COLUMN change_seq INTEGER;
    ALTER TABLE interlock_threads ADD COLUMN deadline_us INTEGER;
    UPDATE interlock_threads SET change_seq = rowid;
    CREATE INDEX IF NOT EXISTS interlock_threads_change ON interlock_threads (change_seq);
    CREATE INDEX IF NOT EXISTS interlock_threads_deadline ON interlock_threads (deadline_us)
        WHERE deadline_us IS NOT NULL;
    """,
    # 3: the notification outbox. Times are UTC text of fixed width (``ts_key``).
    """
    CREATE TABLE IF NOT EXISTS interlock_outbox (
        id          TEXT PRIMARY KEY,
        thread_id   TEXT NOT NULL,
        status      TEXT NOT NULL,
        next_at     TEXT NOT NULL,
        created_at  TEXT NOT NULL,
        lease_owner TEXT,
        lease_until TEXT,
        data        TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS interlock_outbox_due ON interlock_outbox (status, next_at);
    CREATE INDEX IF NOT EXISTS interlock_outbox_thread
        ON interlock_outbox (thread_id, created_at);
    """,
    # 4: the search text of each thread (``search_text``), in an index that also serves the
    # listing by status, so a filtered page or a count never reads the rows themselves
    """
    ALTER TABLE interlock_threads ADD COLUMN search TEXT NOT NULL DEFAULT '';
    CREATE INDEX IF NOT EXISTS interlock_threads_search
        ON interlock_threads (status, updated_at, thread_id, search);
    DROP INDEX IF EXISTS interlock_threads_status;
    """,
    # 5: a substring index of the search text (FTS5 trigrams, keyed by a stable ``search_id``:
    # VACUUM may renumber the rowids of this table) and who may read each thread
    # (``Commit.readers``), so that text searches and a reviewer's listing read an index
    # instead of every row. The search index and its triggers are made by ``_index_search``.
    """
    ALTER TABLE interlock_threads ADD COLUMN search_id INTEGER;
    UPDATE interlock_threads SET search_id = rowid;
    CREATE UNIQUE INDEX IF NOT EXISTS interlock_threads_search_id
        ON interlock_threads (search_id);
    CREATE TABLE IF NOT EXISTS interlock_readers (
        key        TEXT NOT NULL,
        thread_id  TEXT NOT NULL,
        status     TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (thread_id, key)
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS interlock_readers_status
        ON interlock_readers (key, status, updated_at, thread_id);
    CREATE INDEX IF NOT EXISTS interlock_readers_all
        ON interlock_readers (key, updated_at, thread_id);
    """,
    # 6: the parent of a sub-agent's thread (``ThreadRecord.parent``) next to the row, carried
    # in the listing index, so that a listing or a count without sub-agents' threads reads the
    # index alone, as before
    """
    ALTER TABLE interlock_threads ADD COLUMN parent_id TEXT;
    UPDATE interlock_threads SET parent_id = json_extract(data, '$.parent.thread_id')
        WHERE instr(data, '"parent":') > 0;
    CREATE INDEX IF NOT EXISTS interlock_threads_listing
        ON interlock_threads (status, updated_at, thread_id, search, parent_id);
    DROP INDEX IF EXISTS interlock_threads_search;
    """,
    # 7: the trigram index is brought up to date after the commits, not inside each of them
    # (see ``_reindex``): ``indexed`` is the text the index holds for the row (NULL: none), and
    # the rows whose text differs from it are found through a partial index. The triggers of
    # migration 5 that indexed every change give way to one that removes a deleted row's text
    # (``_defer_search``).
    """
    ALTER TABLE interlock_threads ADD COLUMN indexed TEXT;
    """,
    # 8: the recovery sweep's mark (``needs_sweep``: running, or failed with work left) in a
    # partial index of the marked rows alone, so that a sweep reads what it may have to do,
    # not every failed thread ever stored (``_backfill_sweep`` marks the rows stored before)
    """
    ALTER TABLE interlock_threads ADD COLUMN sweep INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX IF NOT EXISTS interlock_threads_sweep ON interlock_threads (thread_id)
        WHERE sweep = 1;
    """,
]

SEARCH_INDEX = [
    "CREATE VIRTUAL TABLE interlock_search USING fts5(search, content='', columnsize=0, "
    "tokenize='trigram case_sensitive 1')",
    "INSERT INTO interlock_search (rowid, search) SELECT search_id, search FROM interlock_threads",
    "CREATE TRIGGER interlock_search_insert AFTER INSERT ON interlock_threads BEGIN "
    "INSERT INTO interlock_search (rowid, search) VALUES (new.search_id, new.search); END",
    "CREATE TRIGGER interlock_search_update AFTER UPDATE OF search ON interlock_threads "
    "WHEN old.search IS NOT new.search BEGIN "
    "INSERT INTO interlock_search (interlock_search, rowid, search) "
    "VALUES ('delete', old.search_id, old.search); "
    "INSERT INTO interlock_search (rowid, search) VALUES (new.search_id, new.search); END",
    "CREATE TRIGGER interlock_search_delete AFTER DELETE ON interlock_threads BEGIN "
    "INSERT INTO interlock_search (interlock_search, rowid, search) "
    "VALUES ('delete', old.search_id, old.search); END",
]
"""The trigram index of the search text (migration 5), kept in step with the thread rows by
triggers, inside the transaction that writes the row. Contentless: it holds the trigrams only;
the text stays in the thread row, which every match is checked against."""

FTS_CANDIDATES = 2000
"""A text search takes its candidates from the trigram index when it finds fewer than this
many; a text that matches more threads is looked for in listing order instead, where the
first page of matches comes quickly."""

NEXT_CHANGE = "(SELECT COALESCE(MAX(change_seq), 0) + 1 FROM interlock_threads)"
NEXT_SEARCH_ID = "(SELECT COALESCE(MAX(search_id), 0) + 1 FROM interlock_threads)"


KEPT_WHILE_WAITING = (
    "(id LIKE 'evt\\_%\\_raised' ESCAPE '\\' OR id LIKE 'evt\\_%\\_escalated%' ESCAPE '\\') "
    "AND EXISTS (SELECT 1 FROM interlock_threads t WHERE t.thread_id = interlock_outbox.thread_id "
    "AND t.status = 'interrupted')")
"""The outbox rows a prune keeps (see :func:`interlock.storage.base.posted_a_message`): the events
that posted a request's messages, while their thread waits."""


def _packed(event_json: str) -> bytes:
    """An outbox event as stored: its JSON, deflated. An event repeats its calls' arguments
    (and the default description quotes them again), which deflate stores once; an event is
    read back to the same JSON, so every channel gets the same message. Rows written as text
    by earlier versions are read as they are. Level 1 with an 8 KB window and small hash
    tables: the same pages as the default level 6 for events of a few KB, at two thirds of
    its instructions (an event is deflated on the committing thread)."""
    z = zlib.compressobj(1, zlib.DEFLATED, 13, 4)
    return z.compress(event_json.encode()) + z.flush()


def _micros(at: datetime | None) -> int | None:
    """A deadline as integer microseconds since the epoch (sorts like the instant)."""
    return None if at is None else round(at.timestamp() * 1_000_000)


def _backfill_deadlines(conn: sqlite3.Connection) -> None:
    """Migration 2, for rows written before it: compute each paused thread's deadline."""
    rows = conn.execute(
        "SELECT thread_id, data FROM interlock_threads WHERE status='interrupted'").fetchall()
    for thread_id, data in rows:
        deadline = _micros(review_deadline(ThreadRecord.model_validate_json(data)))
        if deadline is not None:
            conn.execute("UPDATE interlock_threads SET deadline_us=? WHERE thread_id=?",
                         (deadline, thread_id))


def _backfill_search(conn: sqlite3.Connection) -> None:
    """Migration 4, for rows written before it: compute each thread's search text."""
    for thread_id, data in conn.execute(
            "SELECT thread_id, data FROM interlock_threads").fetchall():
        conn.execute("UPDATE interlock_threads SET search=? WHERE thread_id=?",
                     (search_text(ThreadRecord.model_validate_json(data)), thread_id))


def _backfill_sweep(conn: sqlite3.Connection) -> None:
    """Migration 8, for rows written before it: mark those the recovery sweep must look at
    (``needs_sweep``; the last message of a failed thread tells whether the model saw its
    tool results, which rows of that time did not record)."""
    conn.execute("UPDATE interlock_threads SET sweep = 1 WHERE status = 'running' OR "
                 "(status = 'failed' AND (json_extract(data, '$.turn') IS NOT NULL OR "
                 "(SELECT json_extract(m.data, '$.role') FROM interlock_messages m "
                 "WHERE m.thread_id = interlock_threads.thread_id "
                 "ORDER BY m.seq DESC LIMIT 1) = 'tool'))")


def _index_search(conn: sqlite3.Connection) -> None:
    """Migration 5: the search text of every row again (changes stored before it did not
    update it) and the trigram index of it (the read keys of every thread are stored by
    ``_backfill_readers``, run next). An SQLite built
    without FTS5 or its trigram tokenizer (before 3.34) keeps working without the index:
    searches then read the rows in listing order."""
    _backfill_search(conn)
    try:
        for stmt in SEARCH_INDEX:
            conn.execute(stmt)
    except sqlite3.OperationalError as exc:
        conn.execute("DROP TABLE IF EXISTS interlock_search")
        log.warning("SQLite %s cannot build the trigram search index (%s): text searches of "
                    "the thread list will read the rows instead. Use a Python whose SQLite "
                    "is 3.34 or newer with FTS5 for indexed searches.",
                    sqlite3.sqlite_version, exc)


def _backfill_readers(conn: sqlite3.Connection, read_keys: ReadKeys | None,
                      store: object) -> None:
    """Migration 5: who may read each thread stored before it (``readers_of``)."""
    rows = conn.execute(
        "SELECT thread_id, status, updated_at, data FROM interlock_threads").fetchall()
    conn.executemany("INSERT INTO interlock_readers (key, thread_id, status, updated_at) "
                     "VALUES (?, ?, ?, ?)", readers_of(rows, read_keys, store))


def _has_search_index(conn: sqlite3.Connection) -> bool:
    return conn.execute(
        "SELECT 1 FROM sqlite_master WHERE name='interlock_search'").fetchone() is not None


def _defer_search(conn: sqlite3.Connection) -> None:
    """Migration 7: the index holds every row's text as it is now (migration 5's triggers
    kept it in step); from here on ``_reindex`` keeps it so. Without FTS5 there is no index,
    and nothing to keep."""
    if not _has_search_index(conn):
        return
    conn.execute("UPDATE interlock_threads SET indexed = search")
    for stmt in DEFERRED_SEARCH_INDEX:
        conn.execute(stmt)


DEFERRED_SEARCH_INDEX = [
    "DROP TRIGGER IF EXISTS interlock_search_insert",
    "DROP TRIGGER IF EXISTS interlock_search_update",
    "DROP TRIGGER IF EXISTS interlock_search_delete",
    "CREATE TRIGGER interlock_search_delete AFTER DELETE ON interlock_threads "
    "WHEN old.indexed IS NOT NULL BEGIN "
    "INSERT INTO interlock_search (interlock_search, rowid, search) "
    "VALUES ('delete', old.search_id, old.indexed); END",
    "CREATE INDEX IF NOT EXISTS interlock_threads_unindexed ON interlock_threads (search_id) "
    "WHERE indexed IS NOT search",
]
"""Migration 7's layout of the trigram index: the rows it does not hold as they are now are
read through the partial index ``interlock_threads_unindexed``."""

UNINDEXED = ("SELECT search_id, indexed, search FROM interlock_threads "
             "WHERE indexed IS NOT search LIMIT ?")
UNINDEXED_IDS = "SELECT search_id FROM interlock_threads WHERE indexed IS NOT search LIMIT ?"
INDEX_DELETE = ("INSERT INTO interlock_search (interlock_search, rowid, search) "
                "VALUES ('delete', ?, ?)")
INDEX_INSERT = "INSERT INTO interlock_search (rowid, search) VALUES (?, ?)"
INDEX_MARK = "UPDATE interlock_threads SET indexed = ? WHERE search_id = ?"

REINDEX_EVERY = 1.0
"""Seconds between two passes of ``_reindex`` while changes are being stored: a thread whose
text changes at every commit (the preview follows the latest message) is indexed once per
pass instead of at each change, and searches read the few rows changed since from the partial
index."""

REINDEX_BURST = 0.05
"""Seconds between two passes while more rows wait than one pass takes (a burst)."""

REINDEX_WAIT_MS = 50
"""How long a pass waits for another process's write transaction before it gives up until
the next one is due (a commit of this store waits ``busy_timeout``)."""

REINDEX_ROWS = 500
"""Rows one pass of ``_reindex`` brings up to date in one transaction (a few tens of ms): a
burst of changes is worked off in several passes, between which other writes go on."""


def _reindex(conn: sqlite3.Connection, limit: int = REINDEX_ROWS) -> int:
    """Bring up to ``limit`` rows of the trigram index up to date with their thread rows, in
    one write transaction: the text the index holds for the row is removed and its current
    text added. Returns how many rows remain to do (at least one more when ``limit`` were
    done). Searches are exact either way: they also read the rows not yet done."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        rows = conn.execute(UNINDEXED, (limit + 1,)).fetchall()
        for search_id, indexed, search in rows[:limit]:
            if indexed is not None:
                conn.execute(INDEX_DELETE, (search_id, indexed))
            conn.execute(INDEX_INSERT, (search_id, search))
        conn.executemany(INDEX_MARK, [(search, search_id) for search_id, _, search
                                      in rows[:limit]])
        conn.execute("COMMIT")
    except BaseException:
        _rollback(conn)
        raise
    return len(rows) - min(len(rows), limit)


SWEEP_PAGE = ("SELECT data FROM interlock_threads INDEXED BY interlock_threads_sweep "
              "WHERE sweep = 1 AND thread_id > ? ORDER BY thread_id LIMIT ?")
"""A page of the threads the recovery sweep must look at, read through the partial index of
those rows alone (``INDEXED BY``: a plan that would read anything else is an error)."""

BACKFILL: dict[int, Callable[[sqlite3.Connection], None]] = {
    2: _backfill_deadlines, 4: _backfill_search, 5: _index_search, 7: _defer_search,
    8: _backfill_sweep}
"""Python steps run right after the SQL of the migration that produces that version."""

SCHEMA_VERSION = len(MIGRATIONS)
"""Version of the stored format. Readers refuse a database whose version is newer."""

READERS_MIGRATION = 5
"""The migration that makes the readers index; the rows stored before it are indexed then."""


def _phrase(needle: str) -> str:
    """``needle`` as an FTS5 string: one phrase of its trigrams, every character literal."""
    return '"' + needle.replace('"', '""') + '"'


def _candidates(conn: sqlite3.Connection, needle: str) -> str | None:
    """The ``search_id`` of every thread whose search text may hold ``needle``, from the
    trigram index, as a JSON array; None when the index cannot answer (a needle shorter than
    a trigram, no index) or finds :data:`FTS_CANDIDATES` or more (then reading in listing
    order finds a page sooner)."""
    if len(needle) < 3 or not _has_search_index(conn):
        return None
    rows = conn.execute("SELECT rowid FROM interlock_search WHERE interlock_search MATCH ? "
                        "LIMIT ?", (_phrase(needle), FTS_CANDIDATES)).fetchall()
    if len(rows) >= FTS_CANDIDATES:
        return None
    # the rows whose text changed since the index last took them (``_reindex``) are candidates
    # too; every candidate is checked against the row's text, so one the index holds with an
    # older text is found only if its text now holds the needle
    pending = conn.execute(UNINDEXED_IDS, (FTS_CANDIDATES - len(rows),)).fetchall()
    if len(rows) + len(pending) >= FTS_CANDIDATES:
        return None
    return json.dumps(sorted({r[0] for r in rows} | {r[0] for r in pending}))


def _cursor(where: list[str], params: list[object], alias: str, before: datetime | None,
            before_id: str | None) -> None:
    if before is not None and before_id is not None:
        where.append(f"({alias}.updated_at<? OR ({alias}.updated_at=? AND {alias}.thread_id<?))")
        params += [before.isoformat(), before.isoformat(), before_id]
    elif before is not None:
        where.append(f"{alias}.updated_at<?")
        params.append(before.isoformat())


def _select(conn: sqlite3.Connection, what: str, *, status: str | None, search: str | None,
            readers: Sequence[str] | None = None, before: datetime | None = None,
            before_id: str | None = None, limit: int | None = None,
            top_level: bool = False,
            metadata: dict[str, Any] | None = None) -> list[tuple[object, ...]]:
    """``what`` (columns of ``t``, the thread rows) of the threads that pass the filters,
    newest first, at most ``limit``; from the indexes that answer these filters best, in one
    read transaction (the candidates of the trigram index and the rows: one snapshot)."""
    conn.execute("BEGIN")
    try:
        return _query(conn, what, status=status, search=search, readers=readers,
                      before=before, before_id=before_id, limit=limit, top_level=top_level,
                      metadata=metadata)
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


def _query(conn: sqlite3.Connection, what: str, *, status: str | None, search: str | None,
           readers: Sequence[str] | None, before: datetime | None, before_id: str | None,
           limit: int | None, top_level: bool = False,
           metadata: dict[str, Any] | None = None) -> list[tuple[object, ...]]:
    needle = search_key(search) if search else ""
    candidates = _candidates(conn, needle) if needle else None
    where: list[str] = []
    params: list[object] = []
    if candidates is not None:
        source = "json_each(?) c CROSS JOIN interlock_threads t ON t.search_id = c.value"
        params.append(candidates)
    else:
        source = "interlock_threads t"
    if needle:
        where.append("instr(t.search, ?) > 0")
        params.append(needle)
    if status is not None:
        where.append("t.status=?")
        params.append(status)
    if top_level:
        where.append("t.parent_id IS NULL")
    if metadata:
        # read in listing order and tested row by row (no index of metadata here)
        where.append(f"{METADATA_CONTAINS}(json_extract(t.data, '$.metadata'), ?)")
        params.append(json.dumps(to_jsonable_python(metadata, fallback=str)))
    if readers is not None and (candidates is not None or metadata):
        where.append("EXISTS (SELECT 1 FROM interlock_readers r WHERE r.thread_id=t.thread_id "
                     f"AND r.key IN ({', '.join('?' for _ in readers)}))")
        params += list(readers)
    elif readers is not None:
        # the newest rows of each key, then of their union: each key's rows are read in
        # listing order from its own index range, however many threads others may read
        parts: list[str] = []
        for key in readers:
            sub = ["r.key=?"]
            params.append(key)
            if status is not None:
                sub.append("r.status=?")
                params.append(status)
            _cursor(sub, params, "r", before, before_id)
            join = ""
            if needle or top_level:
                join = " JOIN interlock_threads s ON s.thread_id=r.thread_id"
            if needle:
                sub.append("instr(s.search, ?) > 0")
                params.append(needle)
            if top_level:
                sub.append("s.parent_id IS NULL")
            parts.append(
                f"SELECT thread_id FROM (SELECT r.thread_id FROM interlock_readers r{join} "
                f"WHERE {' AND '.join(sub)} ORDER BY r.updated_at DESC, r.thread_id DESC"
                + (" LIMIT ?)" if limit is not None else ")"))
            if limit is not None:
                params.append(limit)
        where.append("t.thread_id IN (" + " UNION ".join(parts or ["SELECT NULL"]) + ")")
    _cursor(where, params, "t", before, before_id)
    order = " ORDER BY t.updated_at DESC, t.thread_id DESC"
    sql = f"SELECT {what} FROM {source}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    if limit is not None:
        sql += order + " LIMIT ?"
        params.append(limit)
        if candidates is not None:  # sort the candidates' ids, then read the page's rows
            sql = (f"SELECT {what} FROM interlock_threads t WHERE t.thread_id IN ("
                   + sql.replace(f"SELECT {what} ", "SELECT t.thread_id ", 1) + ")" + order)
    return conn.execute(sql, params).fetchall()


METADATA_CONTAINS = "interlock_metadata_contains"
"""The SQL function deciding the metadata filter (registered on each connection)."""


def _metadata_contains(have: str | None, want: str) -> bool:
    return have is not None and metadata_contains(json.loads(have), json.loads(want))


class _Write:
    """One change waiting to be stored by a group commit, and its outcome. A change made on
    an event loop also has the future its caller awaits, set on that loop once it is done."""

    __slots__ = ("done", "error", "fn", "future", "loop")

    def __init__(self, fn: Callable[[sqlite3.Connection], None]) -> None:
        self.fn = fn
        self.done = False
        self.error: BaseException | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.future: asyncio.Future[None] | None = None


def _settle(items: list[_Write]) -> None:
    for item in items:
        if item.future is not None and not item.future.done():
            item.future.set_result(None)


def _tell(batch: list[_Write]) -> None:
    """Wake the callers of a stored batch: one call into each event loop that waits, not one
    per change (on a virtual machine a wake-up can cost more than the change's statements)."""
    waiting: dict[asyncio.AbstractEventLoop, list[_Write]] = {}
    for item in batch:
        if item.loop is not None:
            waiting.setdefault(item.loop, []).append(item)
    for loop, items in waiting.items():
        with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits any more
            loop.call_soon_threadsafe(_settle, items)


def _file_path(path: object) -> str:
    """The file of ``SqliteCheckpointer(path)``: a path (``~`` is the home directory), or
    ``":memory:"``. A URL is refused: ``SqliteCheckpointer("sqlite:///x.db")`` would otherwise
    create a directory named ``sqlite:`` with the database in it."""
    if isinstance(path, Path):
        return str(path.expanduser())
    if not isinstance(path, str):
        raise ConfigurationError(
            f"SqliteCheckpointer needs a file path (str or pathlib.Path), got "
            f"{type(path).__name__} {path!r}: e.g. SqliteCheckpointer('interlock.db').")
    scheme, sep, rest = path.partition("://")
    if sep and scheme != "file" and scheme.isascii() and scheme.replace("+", "").isalpha():
        if scheme == "sqlite":
            file = rest[1:] if rest.startswith("/") else rest
            raise ConfigurationError(
                f"SqliteCheckpointer({path!r}) got a URL; it takes a file path: "
                f"SqliteCheckpointer({file or 'interlock.db'!r}). A --db URL is opened with "
                f"interlock.storage.from_url({path!r}).")
        raise ConfigurationError(
            f"SqliteCheckpointer({path!r}) got a {scheme}:// URL; it takes a file path, e.g. "
            f"SqliteCheckpointer('interlock.db'). A database URL is opened with "
            f"interlock.storage.from_url(url) (postgresql://: PostgresCheckpointer(url)).")
    return os.path.expanduser(path) if path.startswith("~") else path


class SqliteCheckpointer:
    """Durable threads in one SQLite file.

    WAL journal mode and ``synchronous=FULL`` by default: a commit (and so a reviewer's decision
    once acknowledged) survives power loss. Several processes may share the file; writes are
    serialised by SQLite and every thread change is a compare-and-set on its version.

    ``read_keys``: who may read a thread (``interlock.authz.read_keys``), needed only to open
    a file that holds threads written before interlock indexed their readers (schema version
    4 or older); every change brings its readers on the :class:`Commit`.
    """

    durable = True

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: Literal["FULL", "NORMAL", "OFF"] = "FULL",
        busy_timeout: float = 30.0,
        read_keys: ReadKeys | None = None,
    ) -> None:
        self.path = _file_path(path)
        if synchronous not in ("FULL", "NORMAL", "OFF"):
            raise ConfigurationError(
                f"SqliteCheckpointer(synchronous={synchronous!r}): use 'FULL' (the default: "
                f"a commit survives power loss), 'NORMAL' or 'OFF'.")
        self.synchronous = synchronous
        self.busy_timeout = busy_timeout
        self.read_keys = read_keys
        """Who may read a thread (:data:`~interlock.storage.base.ReadKeys`): needed once, to
        index the threads of a file written before the readers index existed."""
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="interlock-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._queue: list[_Write] = []
        """Changes waiting for the next group commit (see ``_flush``)."""
        self._queue_lock = threading.Lock()
        self._draining = False
        """A job of the worker thread stores queued changes until none is left (``_drain``)."""
        self._indexing = False
        """The file has the trigram index (FTS5 with its trigram tokenizer): ``_reindex``
        keeps it up to date after the commits."""
        self._unindexed = False
        """Rows may wait for ``_reindex`` (a change was stored, or a pass left some)."""
        self._next_reindex = 0.0
        """``time.monotonic()`` from which the next pass may run."""
        self._wrote = False
        """This store has stored a change (``close`` then leaves the index up to date)."""
        self._timer: threading.Timer | None = None
        self._timer_pid = 0
        """The pass that runs once changes stop coming (``_arm``), and the process it was
        armed in (a forked child has no such thread)."""

    def __repr__(self) -> str:
        return f"SqliteCheckpointer({self.path!r}, synchronous={self.synchronous})"

    @property
    def spill_dir(self) -> Path | None:
        """Where a run keeps a tool's result that could not be stored yet (a full disk, a
        lock held too long), so that whoever recovers the thread stores it instead of asking
        about an unknown outcome: ``<database>.unstored`` next to the file."""
        if self.path in ("", ":memory:") or self.path.startswith("file:"):
            return None
        return Path(self.path + ".unstored")

    # -- plumbing ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            if self._closed:
                raise StorageError(f"SqliteCheckpointer({self.path!r}) is closed.")
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path, timeout=self.busy_timeout, isolation_level=None,
                check_same_thread=False,
            )
            _set_wal(conn, self.busy_timeout)
            conn.create_function(METADATA_CONTAINS, 2, _metadata_contains, deterministic=True)
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            conn.execute("PRAGMA foreign_keys=ON")
            # Statement journals in memory: the search index's update inside a commit spills
            # its statement journal past SQLite's 64 KiB threshold, which otherwise creates,
            # writes and deletes a temporary file twice per cycle (about 45 writes each). Every
            # query here reads an index in order or keeps a LIMIT, so no temporary object grows
            # with the number of threads.
            conn.execute("PRAGMA temp_store=MEMORY")
            self._migrate(conn)
            self._indexing = _has_search_index(conn)
            # rows another process left for a pass: taken up by this one once it is due, if
            # this process may write the file
            self._unindexed = self._indexing and conn.execute(
                UNINDEXED_IDS, (1,)).fetchone() is not None and os.access(self.path, os.W_OK)
            self._next_reindex = time.monotonic() + REINDEX_EVERY
            self._conn = conn
            self._arm()
        return self._conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        # the common case, an up-to-date file, needs no write lock
        try:
            row = conn.execute(
                "SELECT value FROM interlock_meta WHERE key='schema_version'"
            ).fetchone()
        except sqlite3.OperationalError:  # no meta table yet: a new file
            row = None
        if row is not None and int(row[0]) == SCHEMA_VERSION:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS interlock_meta (key TEXT PRIMARY KEY, value TEXT)"
            )
            row = conn.execute(
                "SELECT value FROM interlock_meta WHERE key='schema_version'"
            ).fetchone()
            current = int(row[0]) if row else 0
            if current > SCHEMA_VERSION:
                raise StorageError(
                    f"The database {self.path!r} has interlock schema version {current}, but "
                    f"this interlock only knows versions up to {SCHEMA_VERSION}. Upgrade "
                    f"interlock before opening it."
                )
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for stmt in MIGRATIONS[version - 1].split(";"):
                    if stmt.strip():
                        conn.execute(stmt)
                if version in BACKFILL:
                    BACKFILL[version](conn)
                if version == READERS_MIGRATION:
                    _backfill_readers(conn, self.read_keys, self)
                conn.execute(
                    "INSERT INTO interlock_meta (key, value) VALUES ('schema_version', ?) "
                    "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                    (str(version),),
                )
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await offload(self._executor, lambda: self._with_conn(fn))

    def _with_conn(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` on the connection; one caller at a time (the worker thread, or a
        blocking-API caller's own thread). SQLite's errors become :class:`StorageError`."""
        with self._lock:
            try:
                return fn(self._connect())
            except sqlite3.Error as exc:
                raise self._error(exc) from exc

    def _error(self, exc: sqlite3.Error) -> StorageError:
        """A :class:`StorageError` that names what went wrong with the file, and what to do."""
        name = getattr(exc, "sqlite_errorname", "") or ""
        where = f"The SQLite database {self.path!r}"
        if name == "SQLITE_FULL":
            text = (f"{where} cannot grow: the disk (or file system) holding it is full "
                    f"(SQLite: {exc}). Nothing of this change was stored. Free space, then "
                    f"call the thread again: it is recovered from its last stored step.")
        elif name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            text = (f"{where} stayed locked by another connection for longer than "
                    f"busy_timeout={self.busy_timeout:g}s (SQLite: {exc}). Nothing of this "
                    f"change was stored. Find the process holding a long write transaction, or "
                    f"raise SqliteCheckpointer(busy_timeout=...), and try again.")
        elif name.startswith("SQLITE_READONLY") or (
                name.startswith("SQLITE_CANTOPEN") and self._read_only_place()):
            text = (f"{where} is read-only for this process (SQLite: {exc}): check the "
                    f"permissions of the file, its directory (the -wal and -shm files live "
                    f"there) and the mount. Nothing of this change was stored.")
        elif name.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN")):
            text = (f"{where} could not be read or written (SQLite {name}: {exc}); check the "
                    f"disk and the file's path. Nothing of this change was stored.")
        elif name == "SQLITE_CORRUPT" or name == "SQLITE_NOTADB":
            text = (f"{where} is damaged or not an SQLite file (SQLite: {exc}); restore it "
                    f"from a backup.")
        else:
            text = f"{where} failed ({name or type(exc).__name__}: {exc})."
        return StorageError(text)

    def _read_only_place(self) -> bool:
        """Whether the database's directory cannot be written (a read-only mount: SQLite then
        cannot create the -wal / -shm files it needs to open the file)."""
        if self.path == ":memory:":
            return False
        return not os.access(Path(self.path).parent, os.W_OK)

    def schema_version(self) -> int:
        row = self._with_conn(lambda conn: conn.execute(
            "SELECT value FROM interlock_meta WHERE key='schema_version'"
        ).fetchone())
        return int(row[0]) if row else 0

    # -- protocol ---------------------------------------------------------------------------

    async def load(self, thread_id: str, *, after_seq: int = 0) -> ThreadSnapshot | None:
        def q(conn: sqlite3.Connection) -> ThreadSnapshot | None:
            conn.execute("BEGIN")
            try:
                row = conn.execute(
                    "SELECT data FROM interlock_threads WHERE thread_id=?", (thread_id,)
                ).fetchone()
                if row is None:
                    return None
                thread = ThreadRecord.model_validate_json(row[0])
                messages = messages_from_json([r[0] for r in conn.execute(
                    "SELECT data FROM interlock_messages WHERE thread_id=? AND seq>=? "
                    "ORDER BY seq",
                    (thread_id, after_seq),
                ).fetchall()])
                journal: dict[str, JournalEntry] = {}
                if thread.turn is not None:
                    for r in conn.execute(
                        "SELECT data FROM interlock_journal WHERE thread_id=? AND turn=?",
                        (thread_id, thread.turn),
                    ):
                        e = JournalEntry.model_validate_json(r[0])
                        journal[e.tool_call_id] = e
                return ThreadSnapshot(thread=thread, messages=messages, journal=journal)
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

        return await self._run(q)

    async def commit(self, change: Commit, *, expected_version: int | None) -> None:
        refuse_enqueue(self, change)
        t = change.thread
        first_seq = t.message_count - len(change.messages)
        # serialised before the write lock is taken, so that it is held as briefly as possible
        row = thread_json(t)
        updated = t.updated_at.isoformat()
        deadline = _micros(review_deadline(t))
        search = search_text(t)
        parent = t.parent.thread_id if t.parent is not None else None
        sweep = int(needs_sweep(t))
        readers = [(k, t.thread_id, t.status, updated) for k in change.readers]
        messages = [(t.thread_id, first_seq + i, message_to_json(m))
                    for i, m in enumerate(change.messages)]
        journal = [(t.thread_id, e.tool_call_id, e.turn, e.position, e.state.value,
                    journal_json(e)) for e in change.journal]
        audit = [(a.thread_id, a.seq, row) for a, row in zip(change.audit, audit_rows(change),
                                                              strict=True)]
        outbox = [(ev.id, ev.thread_id, ev.status, ts_key(ev.next_at), ts_key(ev.created_at),
                   _packed(outbox_json(ev))) for ev in change.outbox]

        def w(conn: sqlite3.Connection) -> None:
            if expected_version is None:
                try:
                    conn.execute(
                        "INSERT INTO interlock_threads (thread_id, status, version, "
                        "updated_at, data, deadline_us, search, parent_id, sweep, change_seq, "
                        "search_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, " + NEXT_CHANGE + ", "
                        + NEXT_SEARCH_ID + ")",
                        (t.thread_id, t.status, t.version, updated, row, deadline, search,
                         parent, sweep),
                    )
                except sqlite3.IntegrityError:
                    raise VersionConflict(t.thread_id, None) from None
            else:
                cur = conn.execute(
                    "UPDATE interlock_threads SET status=?, version=?, updated_at=?, data=?, "
                    "deadline_us=?, search=?, parent_id=?, sweep=?, change_seq=" + NEXT_CHANGE
                    + " WHERE thread_id=? AND version=?",
                    (t.status, t.version, updated, row, deadline, search, parent, sweep,
                     t.thread_id, expected_version),
                )
                if cur.rowcount != 1:
                    raise VersionConflict(t.thread_id, expected_version)
                conn.execute("DELETE FROM interlock_readers WHERE thread_id=?", (t.thread_id,))
            if readers:
                conn.executemany("INSERT INTO interlock_readers (key, thread_id, status, "
                                 "updated_at) VALUES (?, ?, ?, ?)", readers)
            if messages:
                conn.executemany(
                    "INSERT INTO interlock_messages (thread_id, seq, data) VALUES (?, ?, ?)",
                    messages,
                )
            if journal:
                conn.executemany(
                    "INSERT INTO interlock_journal (thread_id, tool_call_id, turn, position, "
                    "state, data) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id, "
                    "tool_call_id) DO UPDATE SET state=excluded.state, data=excluded.data",
                    journal,
                )
            if audit:
                conn.executemany(
                    "INSERT INTO interlock_audit (thread_id, seq, data) VALUES (?, ?, ?)",
                    audit,
                )
            if outbox:
                conn.executemany(
                    "INSERT INTO interlock_outbox (id, thread_id, status, next_at, "
                    "created_at, data) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                    outbox,
                )

        slot = _Write(w)
        loop = asyncio.get_running_loop()
        if BLOCKING_CALLER.get() is loop:  # a blocking call: stored in the caller's thread
            with self._queue_lock:
                self._queue.append(slot)
            try:
                self._with_conn(lambda conn: self._flush(conn, slot))
            except BaseException:
                self._unqueue(slot)
                raise
        else:
            # stored by the worker thread's drain; one job stores every change queued while it
            # runs, so many runs committing at once share its transactions and its wake-ups
            slot.loop, slot.future = loop, loop.create_future()
            with self._queue_lock:
                self._queue.append(slot)
                start, self._draining = not self._draining, True
            if start:
                try:
                    self._executor.submit(self._drain)
                except RuntimeError:  # the executor is shut down: the store was closed
                    with self._queue_lock:
                        self._draining = False
                    self._unqueue(slot)
                    raise StorageError(f"SqliteCheckpointer({self.path!r}) is closed.") from None
            try:
                await slot.future
            except BaseException:
                self._unqueue(slot)
                raise
        if slot.error is not None:
            if isinstance(slot.error, sqlite3.Error):
                raise self._error(slot.error) from slot.error
            raise slot.error

    async def list_threads(
        self, *, status: str | None = None, limit: int = 50, before: datetime | None = None,
        before_id: str | None = None, search: str | None = None,
        readers: Sequence[str] | None = None, top_level: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> list[ThreadRecord]:
        def q(conn: sqlite3.Connection) -> list[ThreadRecord]:
            rows = _select(conn, "t.data", status=status, search=search, readers=readers,
                           before=before, before_id=before_id, limit=limit,
                           top_level=top_level, metadata=metadata)
            return [ThreadRecord.model_validate_json(str(r[0])) for r in rows]

        return await self._run(q)

    async def count_threads(self, *, status: str | None = None, search: str | None = None,
                            top_level: bool = False) -> int:
        def q(conn: sqlite3.Connection) -> int:
            return int(str(_select(conn, "count(*)", status=status, search=search,
                                   top_level=top_level)[0][0]))

        return await self._run(q)

    def _flush(self, conn: sqlite3.Connection, slot: _Write) -> None:
        """Group commit: store every change queued so far in one transaction, each inside a
        savepoint of its own (a change that fails — a version conflict — is rolled back alone
        and reported to its caller; a change that is alone needs no savepoint, see
        :meth:`_store`), with one durable ``COMMIT`` for all of them. Runs under the
        connection lock; the caller whose change an earlier flush already stored returns at
        once. Each caller learns its outcome only after that ``COMMIT``: a change is never
        acknowledged before it is durable."""
        if slot.done:
            return
        with self._queue_lock:
            batch, self._queue = self._queue, []
        self._store(conn, batch)

    def _unqueue(self, slot: _Write) -> None:
        """Take back a change whose caller gave up: one no flush has taken yet is never
        stored; one already taken is stored whole."""
        with self._queue_lock:
            if slot in self._queue:
                self._queue.remove(slot)

    def _drain(self) -> None:
        """The worker thread's job: group commits until the queue is empty. Changes queued
        while a transaction is written go into the next one, without a job of their own."""
        while True:
            # The batch is taken under the connection's lock, as ``_flush`` takes it: a change
            # that a flush has taken is stored (done) before any other flush can look at it, so
            # a blocking caller never returns while its change is still on its way.
            with self._lock:
                with self._queue_lock:
                    batch, self._queue = self._queue, []
                    if not batch:
                        self._draining = False
                        return
                error: BaseException
                try:
                    conn = self._connect()
                except sqlite3.Error as exc:  # the file could not be opened
                    error = self._error(exc)
                    error.__cause__ = exc
                except BaseException as exc:  # e.g. the store was closed
                    error = exc
                else:
                    self._store(conn, batch)
                    continue
                for item in batch:
                    item.error = error
                    item.done = True
                _tell(batch)

    def _store(self, conn: sqlite3.Connection, batch: list[_Write]) -> None:
        """Store ``batch`` in one transaction (see :meth:`_flush`) and tell its callers."""
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                # a change alone is a transaction of its own: no savepoint to keep it apart
                # from others, and its failure rolls the transaction back whole
                alone = len(batch) == 1
                for item in batch:
                    if not alone:
                        conn.execute("SAVEPOINT interlock_change")
                    try:
                        item.fn(conn)
                    except Exception as exc:
                        item.error = exc
                        if not conn.in_transaction:
                            # SQLite rolled back the whole transaction itself (disk full, I/O
                            # error): nothing of the batch is stored, and this is why
                            raise
                        conn.execute("ROLLBACK" if alone else "ROLLBACK TO interlock_change")
                    if not alone:
                        conn.execute("RELEASE interlock_change")
                if conn.in_transaction:
                    conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise
        except Exception as exc:
            for item in batch:
                if item.error is None:
                    item.error = exc
        finally:
            for item in batch:
                item.done = True
            _tell(batch)
        if self._indexing:
            self._unindexed = self._wrote = True
            self._reindex_due(conn)
            self._arm()

    # -- the trigram index, kept up to date after the commits ---------------------------------

    def _reindex_due(self, conn: sqlite3.Connection, *, idle: bool = False) -> None:
        """Run a pass of ``_reindex`` if one is due (under the connection lock). Passes come at
        most every ``REINDEX_EVERY`` seconds while changes are stored, and every
        ``REINDEX_BURST`` while a burst is worked off; ``idle``: the queue is empty, so passes
        go on until none is left or a change arrives. A pass that fails is logged and tried
        again later: the index is only ever behind, and searches read the rows it has not
        taken yet."""
        while self._unindexed and time.monotonic() >= self._next_reindex:
            # a pass never waits long for another process's write: the reads and writes of
            # this store queue behind it on the same connection
            conn.execute(f"PRAGMA busy_timeout={REINDEX_WAIT_MS}")
            try:
                left = _reindex(conn)
            except sqlite3.Error as exc:
                if getattr(exc, "sqlite_errorname", "") != "SQLITE_BUSY":
                    log.warning("SQLite %r: the search index could not be brought up to date "
                                "(%s); searches stay exact, and it is tried again in %.0f s.",
                                self.path, exc, REINDEX_EVERY)
                self._next_reindex = time.monotonic() + REINDEX_EVERY
                return
            finally:
                conn.execute(f"PRAGMA busy_timeout={round(self.busy_timeout * 1000)}")
            self._unindexed = left > 0
            if left and idle:
                with self._queue_lock:
                    if not self._queue:  # nothing waits to be stored: the next pass at once
                        continue
            self._next_reindex = time.monotonic() + (REINDEX_BURST if left else REINDEX_EVERY)
            return

    def _arm(self) -> None:
        """Make sure a pass runs once changes stop coming: a timer hands one to the worker
        thread when the next pass is due."""
        if not self._unindexed or self._closed:
            return
        if self._timer is not None and self._timer_pid == os.getpid() and self._timer.is_alive():
            return
        timer = threading.Timer(max(0.0, self._next_reindex - time.monotonic()), self._idle)
        timer.daemon = True
        self._timer, self._timer_pid = timer, os.getpid()
        timer.start()

    def _idle(self) -> None:
        with contextlib.suppress(RuntimeError):  # the store was closed meanwhile
            self._executor.submit(self._idle_pass)

    def _idle_pass(self) -> None:
        with self._lock:
            if self._conn is None:
                return
            with self._queue_lock:
                if self._queue:  # a drain is under way, and passes after its batches
                    return
            self._reindex_due(self._conn, idle=True)
            self._timer = None
            self._arm()

    async def changes(self, *, after: ChangeCursor | None, limit: int = 500) -> ChangePage:
        def q(conn: sqlite3.Connection) -> ChangePage:
            if after is None:
                row = conn.execute("SELECT MAX(change_seq) FROM interlock_threads").fetchone()
                return ChangePage(threads=[], cursor=(int(row[0] or 0), ""))
            rows = conn.execute(
                "SELECT change_seq, thread_id, data FROM interlock_threads WHERE change_seq > ? "
                "ORDER BY change_seq LIMIT ?", (after[0], limit)).fetchall()
            cursor = (int(rows[-1][0]), str(rows[-1][1])) if rows else after
            return ChangePage(threads=[ThreadRecord.model_validate_json(r[2]) for r in rows],
                              cursor=cursor)

        return await self._run(q)

    async def due(self, *, now: datetime, limit: int = 200) -> list[str]:
        def q(conn: sqlite3.Connection) -> list[str]:
            return [r[0] for r in conn.execute(
                "SELECT thread_id FROM interlock_threads WHERE deadline_us IS NOT NULL "
                "AND deadline_us <= ? ORDER BY deadline_us LIMIT ?", (_micros(now), limit))]

        return await self._run(q)

    async def sweep_candidates(self, *, limit: int = 200,
                               after: str | None = None) -> list[ThreadRecord]:
        def q(conn: sqlite3.Connection) -> list[ThreadRecord]:
            rows = conn.execute(SWEEP_PAGE, (after or "", limit)).fetchall()
            return [ThreadRecord.model_validate_json(str(r[0])) for r in rows]

        return await self._run(q)

    async def journal(self, thread_id: str) -> list[JournalEntry]:
        def q(conn: sqlite3.Connection) -> list[JournalEntry]:
            return [
                JournalEntry.model_validate_json(r[0])
                for r in conn.execute(
                    "SELECT data FROM interlock_journal WHERE thread_id=? ORDER BY turn, position",
                    (thread_id,),
                )
            ]

        return await self._run(q)

    async def audit(
        self, *, thread_id: str | None = None, after_id: int = 0, limit: int = 1000
    ) -> list[AuditRecord]:
        def q(conn: sqlite3.Connection) -> list[AuditRecord]:
            if thread_id is None:
                rows = conn.execute(
                    "SELECT id, thread_id, seq, data FROM interlock_audit WHERE id>? "
                    "ORDER BY id LIMIT ?",
                    (after_id, limit),
                )
            else:
                rows = conn.execute(
                    "SELECT id, thread_id, seq, data FROM interlock_audit WHERE thread_id=? "
                    "AND id>? ORDER BY id LIMIT ?",
                    (thread_id, after_id, limit),
                )
            return [stored_audit(*row) for row in rows]

        return await self._run(q)

    # -- outbox ---------------------------------------------------------------------------

    @staticmethod
    def _event(data: str | bytes, owner: str | None, until: str | None) -> OutboxEvent:
        if isinstance(data, bytes):
            data = zlib.decompress(data)
        return OutboxEvent.model_validate_json(data).model_copy(update={
            "lease_owner": owner,
            "lease_until": datetime.fromisoformat(until + "+00:00") if until else None})

    async def outbox_claim(
        self, owner: str, *, now: datetime, until: datetime, limit: int = 20
    ) -> list[OutboxEvent]:
        n, u = ts_key(now), ts_key(until)

        def w(conn: sqlite3.Connection) -> list[OutboxEvent]:
            conn.execute("BEGIN IMMEDIATE")
            try:
                rows = conn.execute(
                    "UPDATE interlock_outbox SET lease_owner=?, lease_until=? WHERE id IN ("
                    "SELECT id FROM interlock_outbox WHERE status='pending' AND next_at<=? "
                    "AND (lease_until IS NULL OR lease_until<?) "
                    "ORDER BY next_at, created_at, id LIMIT ?) "
                    "RETURNING data, lease_owner, lease_until",
                    (owner, u, n, n, limit),
                ).fetchall()
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise
            events = [self._event(*r) for r in rows]
            events.sort(key=lambda e: (e.next_at, e.created_at, e.id))
            return events

        return await self._run(w)

    async def outbox_update(self, event: OutboxEvent, *, leased_by: str | None) -> bool:
        params = (event.status, ts_key(event.next_at), event.lease_owner,
                  ts_key(event.lease_until) if event.lease_until else None,
                  _packed(outbox_json(event)), event.id, leased_by)

        def w(conn: sqlite3.Connection) -> bool:
            cur = conn.execute(
                "UPDATE interlock_outbox SET status=?, next_at=?, lease_owner=?, lease_until=?, "
                "data=? WHERE id=? AND lease_owner IS ?", params)
            return cur.rowcount == 1

        return await self._run(w)

    async def outbox_get(self, event_id: str) -> OutboxEvent | None:
        def q(conn: sqlite3.Connection) -> OutboxEvent | None:
            row = conn.execute("SELECT data, lease_owner, lease_until FROM interlock_outbox "
                               "WHERE id=?", (event_id,)).fetchone()
            return None if row is None else self._event(*row)

        return await self._run(q)

    async def outbox_prune(self, *, before: datetime,
                           statuses: Sequence[str] = ("delivered",)) -> int:
        marks = ", ".join("?" for _ in statuses)
        params = (ts_key(before), *statuses)

        def w(conn: sqlite3.Connection) -> int:
            if not statuses:
                return 0
            return conn.execute(
                f"DELETE FROM interlock_outbox WHERE created_at<? AND status IN ({marks}) "
                f"AND NOT ({KEPT_WHILE_WAITING})", params).rowcount

        return await self._run(w)

    async def outbox_list(
        self, *, status: str | None = None, thread_id: str | None = None, limit: int = 100,
        id_prefix: str | None = None,
    ) -> list[OutboxEvent]:
        where = [w for w, v in (("status=?", status), ("thread_id=?", thread_id))
                 if v is not None]
        params: list[object] = [v for v in (status, thread_id) if v is not None]
        if id_prefix is not None:
            where.append("substr(id, 1, ?) = ?")
            params += [len(id_prefix), id_prefix]
        params.append(limit)
        sql = ("SELECT data, lease_owner, lease_until FROM interlock_outbox"
               + (" WHERE " + " AND ".join(where) if where else "")
               + " ORDER BY created_at, id LIMIT ?")

        def q(conn: sqlite3.Connection) -> list[OutboxEvent]:
            return [self._event(*r) for r in conn.execute(sql, params)]

        return await self._run(q)

    def stored_bytes(self) -> int:
        """Bytes of the database file plus its WAL (after a checkpoint of the WAL)."""
        def q(conn: sqlite3.Connection) -> int:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            page_count = conn.execute("PRAGMA page_count").fetchone()[0]
            page_size = conn.execute("PRAGMA page_size").fetchone()[0]
            return int(page_count) * int(page_size)

        return self._with_conn(q)

    async def close(self) -> None:
        def c() -> None:
            with self._lock:
                self._closed = True
                if self._timer is not None:
                    self._timer.cancel()
                if self._conn is not None:
                    if self._wrote and self._unindexed:  # leave the index up to date
                        self._next_reindex = 0.0
                        with contextlib.suppress(sqlite3.Error):
                            self._reindex_due(self._conn, idle=True)
                    self._conn.close()
                    self._conn = None

        await offload(self._executor, c)


def _set_wal(conn: sqlite3.Connection, busy_timeout: float) -> None:
    """Put the file in WAL mode. Changing the journal mode needs the file to itself, and SQLite
    answers "database is locked" at once, without waiting, while another connection opens the
    same new file; so it is tried again, for up to ``busy_timeout``, as a write would be."""
    give_up = time.monotonic() + busy_timeout
    pause = 0.002
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > give_up:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back what is open. SQLite may already have rolled back by itself (disk full,
    I/O error): then there is nothing to do, and the original error is the one to report."""
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
