"""PostgreSQL checkpointer: the production backend, shared by any number of processes.

psycopg 3 with a (sync) connection pool. Every operation runs in a worker thread of this
checkpointer (``loop.run_in_executor``), so it works from any event loop; a call of the
blocking API runs it in its own thread (see ``interlock._offload``). All tables live in one
schema (``public`` unless given), created and migrated on first use; the schema version is
recorded in ``interlock_meta``.

Data columns are ``TEXT`` holding the records' JSON: exactly what the other backends store,
and safe for any text a model or tool produces (``jsonb`` refuses ``\\u0000``, and
``json ->>`` fails on it), so no query of this module reads inside the JSON: what it filters
or joins on has a column of its own. Cast to ``jsonb`` in ad-hoc queries when needed
(``data::jsonb -> 'state'`` on the journal), knowing that rows with NUL escapes make it fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import select
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .._offload import BLOCKING_CALLER
from ..errors import ConfigurationError, MissingDependency, StorageError
from ..messages import message_to_json, messages_from_json
from ..outbox import OutboxEvent, outbox_json
from .base import (
    AuditRecord,
    ChangeCursor,
    ChangePage,
    Commit,
    JournalEntry,
    QueuedRun,
    ReadKeys,
    SignalTopic,
    StoreHealth,
    ThreadRecord,
    ThreadSnapshot,
    VersionConflict,
    audit_rows,
    journal_json,
    metadata_index,
    needs_sweep,
    readers_of,
    review_deadline,
    search_key,
    search_text,
    stored_audit,
    thread_json,
)
from .postgres_conn import (
    STANDBY_HINT,
    cause,
    read_only_reason,
    redact,
    scrub,
    secrets_of,
    split_dsn,
    url_connect_timeout,
)

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.sql import Composed
    from psycopg_pool import ConnectionPool

T = TypeVar("T")
log = logging.getLogger("interlock.storage")

RECHECK_AFTER = 5.0
"""Seconds a pooled connection may sit idle before it is checked with a round trip."""

TABLES = ("interlock_meta", "interlock_threads", "interlock_messages", "interlock_journal",
          "interlock_audit", "interlock_outbox", "interlock_queue", "interlock_readers")



def _backfill_deadlines(conn: Connection[Any], sql: _Statements) -> None:
    """For rows written before migration 2: compute each paused thread's deadline."""
    rows = conn.execute(sql.fmt(
        "SELECT thread_id, data FROM {s}.interlock_threads WHERE status = 'interrupted'"
    )).fetchall()
    for thread_id, data in rows:
        deadline = review_deadline(ThreadRecord.model_validate_json(data))
        if deadline is not None:
            conn.execute(sql.fmt(
                "UPDATE {s}.interlock_threads SET deadline = %s WHERE thread_id = %s"),
                [deadline, thread_id])


def _backfill_search(conn: Connection[Any], sql: _Statements) -> None:
    """For rows written before migration 5: compute each thread's search text."""
    rows = conn.execute(sql.fmt("SELECT thread_id, data FROM {s}.interlock_threads")).fetchall()
    for thread_id, data in rows:
        conn.execute(sql.fmt("UPDATE {s}.interlock_threads SET search = %s WHERE thread_id = %s"),
                     [search_text(ThreadRecord.model_validate_json(data)), thread_id])


def _copy_turns(conn: Connection[Any], sql: _Statements) -> None:
    """Fill the ``turn`` column from the stored rows (parsed here: Postgres's JSON functions
    refuse rows holding NUL escapes)."""
    rows = conn.execute(sql.fmt("SELECT thread_id, data FROM {s}.interlock_threads")).fetchall()
    turns = [(t, tid) for tid, data in rows
             if (t := json.loads(data).get("turn")) is not None]
    if turns:
        with conn.cursor() as cur:
            cur.executemany(sql.fmt("UPDATE {s}.interlock_threads SET turn = %s "
                                    "WHERE thread_id = %s"), turns)


def _copy_parents(conn: Connection[Any], sql: _Statements) -> None:
    """Fill the ``parent_id`` column from the stored rows (parsed here, as for the turn)."""
    rows = conn.execute(sql.fmt("SELECT thread_id, data FROM {s}.interlock_threads "
                                "WHERE strpos(data, '\"parent\":') > 0")).fetchall()
    parents = [(p["thread_id"], tid) for tid, data in rows
               if isinstance(p := json.loads(data).get("parent"), dict)]
    if parents:
        with conn.cursor() as cur:
            cur.executemany(sql.fmt("UPDATE {s}.interlock_threads SET parent_id = %s "
                                    "WHERE thread_id = %s"), parents)


def _backfill_sweep(conn: Connection[Any], sql: _Statements) -> None:
    """For rows written before migration 9: mark those the recovery sweep must look at
    (``needs_sweep``; the last message of a failed thread tells whether the model saw its
    tool results, which rows of that time did not record; parsed here, as for the turn)."""
    marked = [tid for (tid,) in conn.execute(sql.fmt(
        "SELECT thread_id FROM {s}.interlock_threads WHERE status = 'running' "
        "OR (status = 'failed' AND turn IS NOT NULL)")).fetchall()]
    rows = conn.execute(sql.fmt(
        "SELECT t.thread_id, (SELECT m.data FROM {s}.interlock_messages m "
        "WHERE m.thread_id = t.thread_id ORDER BY m.seq DESC LIMIT 1) "
        "FROM {s}.interlock_threads t WHERE t.status = 'failed' AND t.turn IS NULL")).fetchall()
    marked += [tid for tid, last in rows
               if last is not None and json.loads(last).get("role") == "tool"]
    if marked:
        conn.execute(sql.fmt("UPDATE {s}.interlock_threads SET sweep = true "
                             "WHERE thread_id = ANY(%s)"), [marked])


def _copy_metadata(conn: Connection[Any], sql: _Statements) -> None:
    """Fill the ``metadata`` column from the stored rows (parsed here, as for the turn)."""
    rows = conn.execute(sql.fmt("SELECT thread_id, data FROM {s}.interlock_threads "
                                "WHERE strpos(data, '\"metadata\":') > 0")).fetchall()
    found = [(meta, tid) for tid, data in rows
             if (meta := metadata_index(json.loads(data).get("metadata"))) is not None]
    if found:
        with conn.cursor() as cur:
            cur.executemany(sql.fmt("UPDATE {s}.interlock_threads SET metadata = %s::jsonb "
                                    "WHERE thread_id = %s"), found)


def _backfill_readers(conn: Connection[Any], sql: _Statements, read_keys: ReadKeys | None,
                      store: object) -> None:
    """For rows written before migration 7: who may read each thread (``readers_of``)."""
    rows = conn.execute(sql.fmt(
        "SELECT thread_id, status, updated_at, data FROM {s}.interlock_threads")).fetchall()
    readers = readers_of(rows, read_keys, store)
    if readers:
        with conn.cursor() as cur:
            cur.executemany(sql.fmt("INSERT INTO {s}.interlock_readers "
                                    "(key, thread_id, status, updated_at) "
                                    "VALUES (%s, %s, %s, %s)"), readers)


def _trigram_index(conn: Connection[Any], sql: _Statements) -> None:
    """A ``pg_trgm`` GIN index of the search text, so a search for a text few threads hold
    reads those threads only. The extension is created in ``public`` if missing (one per
    database; since Postgres 13 any role with CREATE on the database may); where it cannot
    be, the tables are made without the index and searches read the rows instead."""
    import psycopg

    # the extension is one per database: installations in other schemas of the same
    # database migrating at the same time would race to create it (one of them failing on
    # the unique name), so its creation is serialised over the whole database
    conn.execute("SELECT pg_advisory_xact_lock(hashtext('interlock-migrate:pg_trgm'))")
    try:
        with conn.transaction():  # a savepoint: a refusal leaves the migration going
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public")
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        log.warning(
            "The Postgres extension pg_trgm could not be created (%s): text searches of the "
            "thread list will read the rows in listing order instead of a trigram index. To "
            "index them, run as a role that may: CREATE EXTENSION pg_trgm; CREATE INDEX "
            "interlock_threads_trigrams ON %s.interlock_threads USING gin (search "
            "gin_trgm_ops);", reason, sql.fmt("{s}").as_string(conn))
    row = conn.execute("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
                       "ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'").fetchone()
    if row is not None:
        conn.execute(sql.fmt("CREATE INDEX interlock_threads_trigrams ON {s}.interlock_threads "
                             "USING gin (search {ext}.gin_trgm_ops)", ext=row[0]))


Migration = str | Callable[["Connection[Any]", "_Statements"], None]

# Ordered migrations; index + 1 is the schema version they produce. ``{s}`` is the schema; a
# function does what SQL cannot.
MIGRATIONS: list[list[Migration]] = [
    [
        """CREATE TABLE {s}.interlock_threads (
            thread_id  TEXT PRIMARY KEY,
            status     TEXT NOT NULL,
            version    BIGINT NOT NULL,
            updated_at TIMESTAMPTZ NOT NULL,
            data       TEXT NOT NULL
        )""",
        "CREATE INDEX interlock_threads_status ON {s}.interlock_threads "
        "(status, updated_at DESC, thread_id DESC)",
        "CREATE INDEX interlock_threads_updated ON {s}.interlock_threads "
        "(updated_at DESC, thread_id DESC)",
        """CREATE TABLE {s}.interlock_messages (
            thread_id TEXT NOT NULL,
            seq       INTEGER NOT NULL,
            data      TEXT NOT NULL,
            PRIMARY KEY (thread_id, seq)
        )""",
        """CREATE TABLE {s}.interlock_journal (
            thread_id    TEXT NOT NULL,
            tool_call_id TEXT NOT NULL,
            turn         INTEGER NOT NULL,
            position     INTEGER NOT NULL,
            state        TEXT NOT NULL,
            data         TEXT NOT NULL,
            PRIMARY KEY (thread_id, tool_call_id)
        )""",
        "CREATE INDEX interlock_journal_turn ON {s}.interlock_journal (thread_id, turn)",
        """CREATE TABLE {s}.interlock_audit (
            id        BIGSERIAL PRIMARY KEY,
            thread_id TEXT NOT NULL,
            seq       INTEGER NOT NULL,
            data      TEXT NOT NULL,
            UNIQUE (thread_id, seq)
        )""",
        "CREATE INDEX interlock_audit_thread ON {s}.interlock_audit (thread_id, id)",
    ],
    # 2: the change feed — each thread row carries the id of the transaction that last wrote
    # it; a reader takes only rows of transactions older than every running one (the
    # snapshot's xmin), so a transaction that commits late can never be skipped — and the
    # deadline of the earliest pending review call, both indexed
    [
        "ALTER TABLE {s}.interlock_threads "
        "ADD COLUMN change_xid xid8 NOT NULL DEFAULT pg_current_xact_id()",
        "ALTER TABLE {s}.interlock_threads ADD COLUMN deadline TIMESTAMPTZ",
        "CREATE INDEX interlock_threads_change ON {s}.interlock_threads (change_xid, thread_id)",
        "CREATE INDEX interlock_threads_deadline ON {s}.interlock_threads (deadline) "
        "WHERE deadline IS NOT NULL",
        _backfill_deadlines,
    ],
    [  # 3: the notification outbox
        """CREATE TABLE {s}.interlock_outbox (
            id          TEXT PRIMARY KEY,
            thread_id   TEXT NOT NULL,
            status      TEXT NOT NULL,
            next_at     TIMESTAMPTZ NOT NULL,
            created_at  TIMESTAMPTZ NOT NULL,
            lease_owner TEXT,
            lease_until TIMESTAMPTZ,
            data        TEXT NOT NULL
        )""",
        "CREATE INDEX interlock_outbox_due ON {s}.interlock_outbox (status, next_at)",
        "CREATE INDEX interlock_outbox_thread ON {s}.interlock_outbox (thread_id, created_at)",
    ],
    # 4: the open turn in a column of its own: reading it out of the row's JSON
    # (``data::json ->> 'turn'``) fails for every row whose text holds a \u0000 escape
    [
        "ALTER TABLE {s}.interlock_threads ADD COLUMN turn INTEGER",
        _copy_turns,
    ],
    [  # 5: the search text of each thread (``search_text``), carried in the status index
        "ALTER TABLE {s}.interlock_threads ADD COLUMN search TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX interlock_threads_search ON {s}.interlock_threads "
        "(status, updated_at DESC, thread_id DESC) INCLUDE (search)",
        "DROP INDEX IF EXISTS {s}.interlock_threads_status",
        _backfill_search,
    ],
    [  # 6: the run queue of separate worker processes (``RunQueue``; ``interlock worker``)
        """CREATE TABLE {s}.interlock_queue (
            thread_id   TEXT PRIMARY KEY,
            ticket      BIGSERIAL NOT NULL,
            queued_at   TIMESTAMPTZ NOT NULL,
            attempts    INTEGER NOT NULL DEFAULT 0,
            lease_owner TEXT,
            lease_until TIMESTAMPTZ
        )""",
        "CREATE INDEX interlock_queue_order ON {s}.interlock_queue (queued_at, thread_id)",
    ],
    # 7: a trigram index of the search text, and who may read each thread (``Commit.readers``;
    # the rows already stored get theirs from ``_backfill_readers``, run after these)
    [
        """CREATE TABLE {s}.interlock_readers (
            key        TEXT NOT NULL,
            thread_id  TEXT NOT NULL,
            status     TEXT NOT NULL,
            updated_at TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (thread_id, key)
        )""",
        "CREATE INDEX interlock_readers_status ON {s}.interlock_readers "
        "(key, status, updated_at DESC, thread_id DESC)",
        "CREATE INDEX interlock_readers_all ON {s}.interlock_readers "
        "(key, updated_at DESC, thread_id DESC)",
        _trigram_index,
    ],
    # 8: the parent of a sub-agent's thread (``ThreadRecord.parent``) next to the row, carried
    # in the listing index, so that a listing or a count without sub-agents' threads reads the
    # index as before
    [
        "ALTER TABLE {s}.interlock_threads ADD COLUMN parent_id TEXT",
        _copy_parents,
        "CREATE INDEX interlock_threads_listing ON {s}.interlock_threads "
        "(status, updated_at DESC, thread_id DESC) INCLUDE (search, parent_id)",
        "DROP INDEX IF EXISTS {s}.interlock_threads_search",
    ],
    # 9: the recovery sweep's mark (``needs_sweep``: running, or failed with work left) in a
    # partial index of the marked rows alone, so that a sweep reads what it may have to do,
    # not every failed thread ever stored
    [
        "ALTER TABLE {s}.interlock_threads ADD COLUMN sweep BOOLEAN NOT NULL DEFAULT false",
        _backfill_sweep,
        "CREATE INDEX interlock_threads_sweep ON {s}.interlock_threads (thread_id) "
        "WHERE sweep",
    ],
    # 10: the thread's metadata (``ThreadRecord.metadata``, LangGraph's thread metadata) as
    # ``jsonb`` next to the row (NULL when it has none), in a GIN index that answers the
    # containment filter (``metadata @> ...``) of a thread search
    [
        "ALTER TABLE {s}.interlock_threads ADD COLUMN metadata JSONB",
        _copy_metadata,
        "CREATE INDEX interlock_threads_metadata ON {s}.interlock_threads "
        "USING gin (metadata jsonb_path_ops)",
    ],
]

# The run queue (``{s}`` is the schema). A queued thread has one row; queuing it again gives
# it a new ticket and drops any claim, so the worker still busy with the older ticket can
# neither extend nor remove it. Claims take rows nobody holds with ``FOR UPDATE SKIP LOCKED``:
# concurrent workers skip each other's rows instead of waiting for them.
ENQUEUE_CTE = (
    ", enq AS (INSERT INTO {s}.interlock_queue (thread_id, queued_at) "
    "SELECT th.thread_id, %(updated_at)s FROM th "
    "ON CONFLICT (thread_id) DO UPDATE SET ticket = EXCLUDED.ticket, "
    "queued_at = EXCLUDED.queued_at, attempts = 0, lease_owner = NULL, lease_until = NULL)"
)
QUEUE_COLUMNS = "thread_id, ticket, attempts, queued_at, lease_owner, lease_until"
QUEUE_CLAIM = (
    "UPDATE {s}.interlock_queue SET lease_owner = %(owner)s, lease_until = %(until)s, "
    "attempts = attempts + 1 "
    "WHERE thread_id IN (SELECT thread_id FROM {s}.interlock_queue "
    "WHERE lease_until IS NULL OR lease_until < %(now)s "
    "ORDER BY queued_at, thread_id LIMIT %(limit)s FOR UPDATE SKIP LOCKED) "
    "RETURNING " + QUEUE_COLUMNS
)
QUEUE_EXTEND = (
    "UPDATE {s}.interlock_queue SET lease_until = %(until)s "
    "WHERE lease_owner = %(owner)s AND thread_id = ANY(%(ids)s) RETURNING thread_id"
)
QUEUE_RELEASE = (
    "UPDATE {s}.interlock_queue SET lease_owner = NULL, lease_until = %(at)s "
    "WHERE thread_id = %(id)s AND ticket = %(ticket)s AND lease_owner = %(owner)s"
)
QUEUE_DONE = (
    "DELETE FROM {s}.interlock_queue "
    "WHERE thread_id = %(id)s AND ticket = %(ticket)s AND lease_owner = %(owner)s"
)
QUEUE_LIST = ("SELECT " + QUEUE_COLUMNS + " FROM {s}.interlock_queue "
              "ORDER BY queued_at, thread_id LIMIT %s")

SCHEMA_VERSION = len(MIGRATIONS)
"""Version of the stored format. Readers refuse a database whose version is newer."""

READERS_MIGRATION = 7
"""The migration that makes the readers index; the rows stored before it are indexed then."""


def _stored_nothing(exc: StorageError) -> StorageError:
    """``exc``, marked as the error of a statement of which nothing was stored."""
    exc.maybe_stored = False
    return exc


def _nothing(read: bool) -> str:
    """What a failed statement left stored, for its error message."""
    return ("This was a read: nothing was changed." if read
            else "Nothing of this change was stored.")


class PostgresCheckpointer:
    """Durable threads in PostgreSQL, for production and for several processes.

    ``dsn``: a libpq connection string or URL (``postgresql://user:pw@host:5432/db``); every
    libpq parameter of it is used (``sslmode``, ``target_session_attrs``, several hosts, ...).
    A URL may also carry interlock's own ``schema``, ``prepare_threshold``, ``max_size``,
    ``pool_timeout``, ``migrate`` and ``spill_dir`` (used where the arguments below are left
    at their defaults).
    ``schema``: where the ``interlock_*`` tables live (default ``public``); created if missing
    (the role needs ``CREATE`` on the database for that, or create the schema beforehand).
    ``min_size`` / ``max_size``: connections kept open / at most (default 10; one per
    concurrent storage operation of this process; the listener takes one more).
    ``timeout``: seconds to wait for a free connection (default 30).
    ``connect_timeout``: seconds to wait for the server when opening a connection.
    ``prepare_threshold``: psycopg's; ``None`` turns prepared statements off, which PgBouncer
    in transaction mode needs. ``listen_dsn``: where the ``LISTEN`` connection goes (default
    ``dsn``): a direct URL to the server when ``dsn`` is a pooler in transaction mode.
    ``migrate``: create and migrate the tables at first use (the default); with ``False`` a
    database behind this version is an error that asks for ``interlock migrate``.
    A server that takes no writes (a standby, a read-only database) is refused at first use.
    ``spill_dir``: a local directory where a run keeps a tool's result it could not store
    (the database went away while the tool ran), so that a process recovering the thread on
    this machine after this one died stores that result instead of asking about an unknown
    outcome (see :attr:`spill_dir`). Without it such a result is kept in memory only.

    Every thread change is one transaction guarded by the thread's version (compare-and-set),
    so any number of processes on any number of machines may share the database.

    ``notify``: every commit sends a ``NOTIFY`` (``pg_notify`` in the same transaction), so
    other processes' watchers and workers wake at once instead of at their next poll
    (:class:`~interlock.storage.base.ChangeSignals`). The run queue of ``interlock worker``
    (:class:`~interlock.storage.base.RunQueue`) lives in ``interlock_queue``.

    ``read_keys``: who may read a thread (``interlock.authz.read_keys``), needed only to open
    a database that holds threads written before interlock indexed their readers (schema
    version 6 or older); every change brings its readers on the :class:`Commit`.
    """

    durable = True

    def __init__(
        self,
        dsn: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int | None = None,
        timeout: float | None = None,
        connect_timeout: float | None = None,
        notify: bool = True,
        prepare_threshold: int | None = 5,
        listen_dsn: str | None = None,
        migrate: bool = True,
        read_keys: ReadKeys | None = None,
        spill_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        try:
            import psycopg  # noqa: F401
            import psycopg_pool  # noqa: F401
        except ImportError as exc:
            raise MissingDependency("PostgresCheckpointer", "postgres", "psycopg") from exc
        parts = split_dsn(dsn)
        schema = schema if schema is not None else (parts.schema or "public")
        max_size = max_size if max_size is not None else (parts.max_size or 10)
        timeout = timeout if timeout is not None else (parts.pool_timeout or 30.0)
        if parts.prepare_given:
            prepare_threshold = parts.prepare_threshold
        if parts.migrate is not None:
            migrate = parts.migrate
        if spill_dir is None:
            spill_dir = parts.spill_dir
        if spill_dir is not None and not str(spill_dir).strip():
            raise ConfigurationError(
                "PostgresCheckpointer(spill_dir=''): give a local directory for results that "
                "could not be stored (it is created when first needed), or leave it out.")
        if connect_timeout is None:  # the URL's connect_timeout, else 10 s
            connect_timeout = url_connect_timeout(parts.libpq) or 10.0
        if not schema or len(schema) > 63:
            raise ConfigurationError(
                f"Postgres schema name {schema!r} must be 1 to 63 characters."
            )
        if min_size < 0 or max_size < max(1, min_size):
            raise ConfigurationError(
                f"PostgresCheckpointer(min_size={min_size}, max_size={max_size}): need "
                f"0 <= min_size <= max_size and max_size >= 1."
            )
        self.dsn = parts.libpq
        self.listen_dsn = split_dsn(listen_dsn).libpq if listen_dsn else self.dsn
        self.prepare_threshold = prepare_threshold
        self.migrate_at_start = migrate
        self.schema = schema
        self.min_size = min_size
        self.max_size = max_size
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._where = redact(dsn)
        self._secrets = secrets_of(dsn)
        """The password's pieces, taken out of every server or libpq message we pass on."""
        self._executor = ThreadPoolExecutor(max_workers=max_size,
                                            thread_name_prefix="interlock-postgres")
        self._pool: ConnectionPool[Any] | None = None
        self._open_lock = threading.Lock()
        self._closed = False
        self._sql = _Statements(schema)
        self._last_used: weakref.WeakKeyDictionary[Connection[Any], float] = (
            weakref.WeakKeyDictionary())
        self.notify = notify
        self.read_keys = read_keys
        """Who may read a thread (:data:`~interlock.storage.base.ReadKeys`): needed once, to
        index the threads of a database written before the readers index existed."""
        self._channels: dict[SignalTopic, str] = {
            "changes": channel_name(schema, "changes"), "queue": channel_name(schema, "queue")}
        self._events_channel = channel_name(schema, "events")
        self._listener: _Listener | None = None
        self._spill_base = (Path(spill_dir).expanduser().absolute()
                            if spill_dir is not None else None)
        self._spill_dir: Path | None = None

    def __repr__(self) -> str:
        return f"PostgresCheckpointer({self._where!r}, schema={self.schema!r})"

    @property
    def spill_dir(self) -> Path | None:
        """Where a run keeps a tool's result that could not be stored yet (the database went
        away while the tool ran), so that whoever recovers the thread stores it instead of
        asking about an unknown outcome: a folder under the ``spill_dir`` given, named by this
        database's store id (a random id kept in ``interlock_meta``), so that results kept
        for one database are never taken for another's, whatever URL reaches it. ``None``
        without ``spill_dir``, and until the store's first connection read the id."""
        return self._spill_dir

    def _said(self, exc: BaseException) -> str:
        """A server's or libpq's message, without any piece of the DSN's password (a URL
        whose password holds an unencoded ``@`` or ``/`` is misread, and its pieces show)."""
        return scrub(str(exc).strip(), self._secrets)

    # -- plumbing ---------------------------------------------------------------------------

    def _open(self) -> ConnectionPool[Any]:
        with self._open_lock:
            if self._pool is not None:
                return self._pool
            if self._closed:
                raise self._closed_error()
            from psycopg_pool import ConnectionPool

            # one direct connection first: a wrong DSN fails at once with the server's own
            # reason, and the schema is ready before the pool hands out connections
            self._prepare()
            pool: ConnectionPool[Any] = ConnectionPool(
                self.dsn, min_size=self.min_size, max_size=self.max_size, open=False,
                timeout=self.timeout, name=f"interlock-{self.schema}",
                kwargs=self._connect_kwargs(),
                check=self._check,
            )
            from psycopg_pool import PoolTimeout

            try:  # the first min_size connections are ready before the first operation
                pool.open(wait=True, timeout=self.connect_timeout)
            except PoolTimeout:
                pool.close()
                raise StorageError(
                    f"Postgres at {self._where} accepted one connection but the pool could not "
                    f"open {self.min_size} within {self.connect_timeout:g}s. Check the server's "
                    f"max_connections, or lower PostgresCheckpointer(min_size=...)."
                ) from None
            self._pool = pool
            return pool

    def _check(self, conn: Connection[Any]) -> None:
        """Before the pool hands out a connection. A round trip to the server would cost as
        much as the statement it precedes, so it is made only when needed: when the connection
        sat idle for a while, or when something arrived on its socket while it was idle (a
        server that ends a connection — restart, failover, ``pg_terminate_backend`` — sends a
        last message or closes the socket, which makes it readable). A failed check makes the
        pool replace the connection."""
        from psycopg_pool import ConnectionPool

        used = self._last_used.get(conn)
        if used is None or time.monotonic() - used > RECHECK_AFTER or _readable(conn):
            ConnectionPool.check_connection(conn)

    def _connect_seconds(self) -> int:
        return max(1, round(self.connect_timeout))

    def _connect_kwargs(self) -> dict[str, Any]:
        return {"autocommit": True, "connect_timeout": self._connect_seconds(),
                "prepare_threshold": self.prepare_threshold}

    def _unreachable(self) -> str | None:
        """Why a fresh connection to the server fails (None: it succeeds)."""
        import psycopg

        try:
            psycopg.connect(self.dsn, **self._connect_kwargs()).close()
        except psycopg.OperationalError as exc:
            text = self._said(exc)
            return text.splitlines()[0] if text else type(exc).__name__
        return None

    def _prepare(self) -> None:
        """The first connection: the server takes writes, and the tables are ready."""
        import psycopg

        try:
            conn = psycopg.connect(self.dsn, **self._connect_kwargs())
        except psycopg.OperationalError as exc:
            raise self._cannot_connect(exc) from exc
        # a pooler whose pool is full accepts the connection and queues its statements
        # (PgBouncer until query_wait_timeout, 120 s): say so instead of waiting in silence
        waiting = threading.Timer(self.connect_timeout, log.warning, [
            "Postgres at %s accepted the connection but has not answered for %g s; still "
            "waiting. A pooler (PgBouncer) with a full pool queues clients until its "
            "query_wait_timeout: keep processes x (max_size + 2) within its pool "
            "(docs/deploying.md); another process's migration also makes this one wait.",
            self._where, self.connect_timeout])
        waiting.daemon = True
        waiting.start()
        try:
            with conn:
                read_only = read_only_reason(conn)
                if read_only is not None:
                    raise StorageError(
                        f"Postgres at {self._where} cannot store threads: {read_only}. "
                        f"{STANDBY_HINT}."
                    )
                self._migrate(conn)
                if self._spill_base is not None:
                    self._spill_dir = self._spill_base / self._store_id(conn)
        except psycopg.Error as exc:
            why = cause(exc) or (
                "the role needs CREATE on the database to create a missing schema (or create "
                "the schema beforehand) and CREATE on the schema for the tables; or run "
                "`interlock migrate` as the schema's owner")
            raise StorageError(
                f"Cannot prepare the interlock tables in schema {self.schema!r} at "
                f"{self._where}: {self._said(exc)}. Cause: {why}."
            ) from exc
        finally:
            waiting.cancel()

    def stored_version(self) -> int:
        """The interlock schema version the database holds in this checkpointer's schema, read
        without creating anything (0: no interlock tables there, e.g. a mistyped schema)."""
        import psycopg

        try:
            conn = psycopg.connect(self.dsn, **self._connect_kwargs())
        except psycopg.OperationalError as exc:
            raise self._cannot_connect(exc) from exc
        try:
            with conn:
                return self._stored_version(conn)
        except psycopg.Error as exc:
            raise StorageError(
                f"Cannot read the interlock tables in schema {self.schema!r} at "
                f"{self._where}: {self._said(exc)}. Cause: "
                f"{cause(exc) or 'see the server message'}."
            ) from exc

    def _cannot_connect(self, exc: Exception) -> StorageError:
        said = self._said(exc)
        reason = said.splitlines()[0] if said else type(exc).__name__
        why = cause(exc)
        return StorageError(
            f"Cannot connect to Postgres at {self._where}: {reason}. "
            + (f"Cause: {why}." if why else "Check that the server runs and that the DSN "
               "(host, port, user, password, database, sslmode) is right.")
        )

    def migrate(self) -> tuple[int, int]:
        """Create the schema and tables if missing and apply pending migrations (what
        ``interlock migrate`` runs, as the role that owns the schema). Returns the schema
        version before and after. Safe to run while other processes use the database."""
        import psycopg

        try:
            with psycopg.connect(self.dsn, **self._connect_kwargs()) as conn:
                # none of it, the version checks included, is cut short by a statement
                # timeout of the role, database or URL (SET LOCAL: a pooler's server
                # connection keeps no setting of this client's)
                with conn.transaction():
                    conn.execute("SET LOCAL statement_timeout = 0")
                    before = self._stored_version(conn)
                self._migrate(conn, force=True, stored=before)
                with conn.transaction():
                    conn.execute("SET LOCAL statement_timeout = 0")
                    return before, self._stored_version(conn)
        except psycopg.Error as exc:
            raise StorageError(
                f"Migrating the interlock tables in schema {self.schema!r} at {self._where} "
                f"failed: {self._said(exc)}. Cause: "
                f"{cause(exc) or 'see the server message'}. Nothing was changed."
            ) from exc

    async def health(self) -> StoreHealth:
        """Whether writes work now (a round trip on a pooled connection: a standby, a
        read-only server or an unreachable one says no, with the reason) and whether other
        processes' changes arrive live (``LISTEN``) or by polling."""
        def check() -> StoreHealth:
            try:
                with self._conn("checking health") as conn:
                    reason = read_only_reason(conn)
            except StorageError as exc:
                reason = str(exc)
            live, live_reason = self._live()
            return StoreHealth(writes=reason is None, reason=reason, live_updates=live,
                               live_reason=live_reason)

        try:
            return await self._run(check)
        except StorageError as exc:  # no database thread took the check up in time
            live, live_reason = self._live()
            return StoreHealth(writes=False, reason=str(exc), live_updates=live,
                               live_reason=live_reason)

    def _live(self) -> tuple[bool | None, str | None]:
        """Whether other processes' changes arrive live now, and why not (None: no listener
        started in this process)."""
        listener = self._listener
        if listener is None:
            return None, None
        if listener.degraded is not None:
            return False, listener.degraded
        if listener.disconnected is not None:
            return False, (f"the LISTEN connection to {listener.where} is down "
                           f"({listener.disconnected}); it reconnects, and changes are seen "
                           f"at the next poll meanwhile")
        return True, None

    @contextlib.contextmanager
    def _conn(self, what: str, *, read: bool = False) -> Iterator[Connection[Any]]:
        """A pooled connection; its failures become a ``StorageError`` saying what was going
        on (``what``) and what of it is stored: nothing for a ``read``."""
        import psycopg
        from psycopg_pool import PoolTimeout

        pool = self._open()
        try:
            with pool.connection() as conn:
                yield conn
                self._last_used[conn] = time.monotonic()
        except PoolTimeout:
            # the pool had no connection to give: either the server cannot be reached (the
            # pool keeps failing to reconnect) or every connection is busy
            unreachable = self._unreachable()
            if unreachable is not None:
                raise _stored_nothing(StorageError(
                    f"Postgres at {self._where} is unreachable while {what}: {unreachable}. "
                    f"{_nothing(read)} Check that the server runs and the network; the thread "
                    f"is recovered from its last stored step on its next call."
                )) from None
            stats = pool.get_stats()
            if stats.get("pool_size", 0) - stats.get("pool_available", 0) < self.max_size:
                raise _stored_nothing(StorageError(
                    f"Postgres at {self._where} answers again, but this process's connections "
                    f"to it broke and were not replaced within {self.timeout:g}s while "
                    f"{what}. {_nothing(read)} Try again (the pool reconnects in the "
                    f"background)."
                )) from None
            raise _stored_nothing(StorageError(
                f"No free Postgres connection within {self.timeout:g}s while {what} "
                f"(max_size={self.max_size}): the server answers, but every connection of "
                f"this process was busy. Raise PostgresCheckpointer(max_size=...) or the "
                f"timeout, or lower the number of concurrent runs."
            )) from None
        except psycopg.OperationalError as exc:
            unreachable = self._unreachable()
            if unreachable is not None:  # the server went away (stopped, restarting, network)
                raise StorageError(
                    f"Postgres at {self._where} is unreachable while {what}: {unreachable}. "
                    f"Check that the server runs and the network; "
                    + (f"{_nothing(read)} Try again." if read else
                       "a write that broke during COMMIT may or may not be stored (the "
                       "thread's next call recovers it either way).")
                ) from exc
            why = cause(exc)
            raise StorageError(
                f"Postgres at {self._where} failed while {what}: {self._said(exc)}. "
                + (f"Cause: {why}. " if why else "Check the server and the network; ")
                + (f"{_nothing(read)} Try again." if read else
                   "A write that broke during COMMIT may or may not be stored (reload the "
                   "thread: recovery handles either case).")
            ) from exc
        except psycopg.Error as exc:  # refused by the server: nothing of it was stored
            why = cause(exc)
            raise _stored_nothing(StorageError(
                f"Postgres at {self._where} refused the statement while {what} "
                f"({type(exc).__name__}: {self._said(exc)}). {_nothing(read)}"
                + (f" Cause: {why}." if why else "")
            )) from exc

    def _read(self, what: str, fn: Callable[[Connection[Any]], T]) -> T:
        """Run a read on a pooled connection. A read that finds its connection broken (the
        server ended it — restart, failover, ``pg_terminate_backend`` — before the pool's check
        could notice) is repeated once on a fresh connection: reading twice is harmless.
        Writes are not repeated here; a commit that broke may or may not be stored, which
        only a reload can tell."""
        import psycopg

        used: Connection[Any] | None = None
        try:
            with self._conn(what, read=True) as used:
                return fn(used)
        except StorageError as exc:
            lost = used is not None and used.broken
            if not (lost and isinstance(exc.__cause__, psycopg.OperationalError)):
                raise
        with self._conn(what, read=True) as conn:
            return fn(conn)

    def _migrate(self, conn: Connection[Any], *, force: bool = False,
                 stored: int | None = None) -> None:
        """Create the schema and tables if missing and apply pending migrations. ``stored``:
        the version the caller read (a process's start reads it here, a plain read with no
        transaction of its own; ``migrate`` reads it exempt from statement timeouts)."""
        q = self._sql
        if stored is None:
            stored = self._stored_version(conn)
        if stored == SCHEMA_VERSION:
            return
        if not (self.migrate_at_start or force):
            raise StorageError(
                f"The interlock tables in schema {self.schema!r} at {self._where} are at "
                f"version {stored}, this interlock needs {SCHEMA_VERSION}: run `interlock "
                f"migrate --db URL` as the role that owns the schema, then start again."
            )
        with conn.transaction():
            # a migration (and the wait for another process's) is exempt from the session's
            # statement and lock timeouts: a backfill may take longer, and stopping half-way
            # would only make the next process start over
            conn.execute("SET LOCAL statement_timeout = 0")
            conn.execute("SET LOCAL lock_timeout = 0")
            # one process migrates; the others wait here and then find the work done
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))",
                         [f"interlock-migrate:{self.schema}"])
            exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s",
                                  [self.schema]).fetchone()
            if exists is None:
                conn.execute(q.create_schema)
            conn.execute(q.create_meta)
            current = self._stored_version(conn)
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for stmt in MIGRATIONS[version - 1]:
                    if isinstance(stmt, str):
                        conn.execute(q.fmt(stmt))
                    else:
                        stmt(conn, q)
                if version == READERS_MIGRATION:
                    _backfill_readers(conn, q, self.read_keys, self)
                conn.execute(q.set_version, [str(version)])

    def _store_id(self, conn: Connection[Any]) -> str:
        """This database's store id (``interlock_meta``), made at its first use with a spill
        directory: a random id, so that two databases never share a spill folder. Read, and
        written only when missing (a start does not write)."""
        import psycopg

        q = self._sql
        try:
            row = conn.execute(q.get_store_id).fetchone()
            if row is None:  # the first start with a spill directory; two at once make one
                conn.execute(q.add_store_id, [uuid.uuid4().hex])
                row = conn.execute(q.get_store_id).fetchone()
        except psycopg.Error as exc:
            raise StorageError(
                f"spill_dir needs this database's store id in {self.schema}.interlock_meta "
                f"at {self._where}, which could not be read or made: {self._said(exc)}. Grant "
                f"the role INSERT and SELECT on that table, or leave spill_dir out."
            ) from exc
        assert row is not None  # inserted above if it was missing
        store_id = str(row[0])
        if not store_id.isalnum():
            raise StorageError(
                f"The store id in {self.schema}.interlock_meta at {self._where} is "
                f"{store_id[:40]!r}, not letters and digits: it names the spill folder. "
                f"Delete that row (a new id is made at the next start) or fix it.")
        return store_id

    def _stored_version(self, conn: Connection[Any]) -> int:
        """The recorded schema version (0 if none); raises if it is newer than this code."""
        table = conn.execute("SELECT 1 FROM pg_tables WHERE schemaname = %s "
                             "AND tablename = 'interlock_meta'", [self.schema]).fetchone()
        if table is None:
            return 0
        row = conn.execute(self._sql.get_version).fetchone()
        current = int(row[0]) if row else 0
        if current > SCHEMA_VERSION:
            raise StorageError(
                f"The Postgres database {self._where} (schema {self.schema!r}) has interlock "
                f"schema version {current}, but this interlock only knows versions up to "
                f"{SCHEMA_VERSION}. Upgrade interlock "
                f"in every process that uses this database."
            )
        return current

    def _closed_error(self) -> StorageError:
        return StorageError(f"{self!r} is closed; create a new checkpointer.")

    async def _run(self, fn: Callable[[], T]) -> T:
        """``fn`` on one of this process's database threads (inline on a blocking call's own
        loop). Every thread may be held by statements that wait on the server (a lock, a
        pooler's queue): a call that no thread has taken up within the pool's timeout is
        refused with a ``StorageError`` (nothing of it ran, and it never will), as a call that
        waited that long for a pooled connection is, instead of waiting without end."""
        loop = asyncio.get_running_loop()
        if BLOCKING_CALLER.get() is loop:
            return fn()
        gate = threading.Lock()
        taken: list[bool] = []  # [True]: a thread runs it; [False]: given up, never to run

        def job() -> T:
            with gate:
                if taken:
                    raise _stored_nothing(self._threads_busy())
                taken.append(True)
            return fn()

        try:
            future = loop.run_in_executor(self._executor, job)
        except RuntimeError:
            if self._closed:  # close() shut the thread pool down: nothing was run
                raise self._closed_error() from None
            raise
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.timeout)
        except TimeoutError:
            with gate:
                if not taken:
                    taken.append(False)
                    # the thread that takes it up later refuses it: that error is nobody's
                    future.add_done_callback(lambda f: f.cancelled() or f.exception())
                    raise _stored_nothing(self._threads_busy()) from None
            return await future  # running: its own waits for a connection are bounded
        except asyncio.CancelledError:
            future.cancel()  # not started: it never runs; started: it runs to its end
            raise

    def _threads_busy(self) -> StorageError:
        return StorageError(
            f"No free Postgres connection within {self.timeout:g}s at {self._where} "
            f"(max_size={self.max_size}): every database thread of this process was busy "
            f"with statements the server has not answered (a lock held by another session, "
            f"a pooler's full queue). Nothing of this call ran. Look for long transactions "
            f"or locks on the server (pg_stat_activity), or raise "
            f"PostgresCheckpointer(max_size=...) or the timeout.")

    def schema_version(self) -> int:
        """The schema version recorded in the database."""
        with self._conn("reading the schema version") as conn:
            return self._stored_version(conn)

    # -- protocol ---------------------------------------------------------------------------

    async def load(self, thread_id: str, *, after_seq: int = 0) -> ThreadSnapshot | None:
        q = self._sql
        if "\x00" in thread_id:  # Postgres text cannot hold NUL: no such thread exists
            return None

        def read() -> ThreadSnapshot | None:
            # one statement, so one snapshot: the row, the messages and the open turn's
            # journal, in one round trip
            rows = self._read(f"loading thread {thread_id!r}",
                              lambda conn: conn.execute(
                                  q.load, {"id": thread_id, "after": after_seq}).fetchall())
            if not rows or rows[0][0] != 0:
                return None
            thread = ThreadRecord.model_validate_json(rows[0][2])
            message_rows: list[str] = []
            journal: dict[str, JournalEntry] = {}
            for part, _, data in rows[1:]:
                if part == 1:
                    message_rows.append(data)
                else:
                    e = JournalEntry.model_validate_json(data)
                    journal[e.tool_call_id] = e
            messages = messages_from_json(message_rows)
            return ThreadSnapshot(thread=thread, messages=messages, journal=journal)

        return await self._run(read)

    async def commit(self, change: Commit, *, expected_version: int | None) -> None:
        q = self._sql
        t = change.thread
        first_seq = t.message_count - len(change.messages)
        params = {
            "id": t.thread_id, "status": t.status, "version": t.version, "turn": t.turn,
            "updated_at": t.updated_at, "data": thread_json(t), "expected": expected_version,
            "deadline": review_deadline(t), "search": search_text(t), "sweep": needs_sweep(t),
            "meta": metadata_index(t.metadata) if t.metadata else None,
            "parent": t.parent.thread_id if t.parent is not None else None,
            "m_seq": [first_seq + i for i in range(len(change.messages))],
            "m_data": [message_to_json(m) for m in change.messages],
            "j_id": [e.tool_call_id for e in change.journal],
            "j_turn": [e.turn for e in change.journal],
            "j_pos": [e.position for e in change.journal],
            "j_state": [e.state.value for e in change.journal],
            "j_data": [journal_json(e) for e in change.journal],
            "a_seq": [a.seq for a in change.audit],
            "a_data": audit_rows(change),
            "o_id": [ev.id for ev in change.outbox],
            "o_status": [ev.status for ev in change.outbox],
            "o_next": [ev.next_at.isoformat() for ev in change.outbox],
            "o_created": [ev.created_at.isoformat() for ev in change.outbox],
            "o_data": [outbox_json(ev) for ev in change.outbox],
            "lock": f"interlock-audit:{self.schema}",
            "ch_changes": self._channels["changes"], "ch_queue": self._channels["queue"],
            "r_keys": list(change.readers),
        }
        stmt = q.commit(expected_version is None, change.enqueue, self.notify)

        def write() -> None:
            # one statement in autocommit mode: one round trip, one transaction
            with self._conn(f"storing a change of thread {t.thread_id!r}") as conn:
                row = conn.execute(stmt, params).fetchone()
            if row is None or row[0] != 1:
                raise VersionConflict(t.thread_id, expected_version)

        await self._run(write)

    async def list_threads(
        self, *, status: str | None = None, limit: int = 50, before: datetime | None = None,
        before_id: str | None = None, search: str | None = None,
        readers: Sequence[str] | None = None, top_level: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> list[ThreadRecord]:
        query, params = self._sql.select(
            "t.data", status=status, search=search, readers=readers, before=before,
            before_id=before_id, limit=limit, top_level=top_level, metadata=metadata)

        def read() -> list[ThreadRecord]:
            rows = self._read("listing threads", lambda c: c.execute(query, params).fetchall())
            return [ThreadRecord.model_validate_json(r[0]) for r in rows]

        return await self._run(read)

    async def count_threads(self, *, status: str | None = None, search: str | None = None,
                            top_level: bool = False) -> int:
        query, params = self._sql.select("count(*)", status=status, search=search,
                                         top_level=top_level)

        def read() -> int:
            row = self._read("counting threads",
                             lambda c: c.execute(query, params).fetchone())
            return int(row[0]) if row else 0

        return await self._run(read)

    async def changes(self, *, after: ChangeCursor | None, limit: int = 500) -> ChangePage:
        q = self._sql

        def fetch(conn: Connection[Any]) -> ChangePage:
            # xmin first: every transaction with a smaller id has ended, so the rows below
            # it that the next statement sees are final, and none can appear there later
            row = conn.execute(q.snapshot_xmin).fetchone()
            xmin = int(row[0]) if row else 0
            if after is None:
                return ChangePage(threads=[], cursor=(xmin, ""))
            rows = conn.execute(q.changes, [after[0], after[1], xmin, limit]).fetchall()
            threads = [ThreadRecord.model_validate_json(r[2]) for r in rows]
            if len(rows) == limit:
                return ChangePage(threads=threads, cursor=(int(rows[-1][0]), str(rows[-1][1])))
            # everything below xmin has been read: later rows have ids >= xmin; those already
            # committed wait for an older transaction that is still open
            held = conn.execute(q.changes_held, [xmin]).fetchone()
            return ChangePage(threads=threads, cursor=max(after, (xmin, "")),
                              held=bool(held and held[0]))

        return await self._run(lambda: self._read("reading the change feed", fetch))

    async def due(self, *, now: datetime, limit: int = 200) -> list[str]:
        def read() -> list[str]:
            rows = self._read("finding due requests",
                              lambda c: c.execute(self._sql.due, [now, limit]).fetchall())
            return [r[0] for r in rows]

        return await self._run(read)

    async def sweep_candidates(self, *, limit: int = 200,
                               after: str | None = None) -> list[ThreadRecord]:
        def read() -> list[ThreadRecord]:
            rows = self._read("finding the threads to sweep", lambda c: c.execute(
                self._sql.sweep_page, [after or "", limit]).fetchall())
            return [ThreadRecord.model_validate_json(r[0]) for r in rows]

        return await self._run(read)

    async def journal(self, thread_id: str) -> list[JournalEntry]:
        if "\x00" in thread_id:
            return []

        def read() -> list[JournalEntry]:
            rows = self._read(f"reading the journal of thread {thread_id!r}",
                              lambda c: c.execute(self._sql.load_journal, [thread_id]).fetchall())
            return [JournalEntry.model_validate_json(r[0]) for r in rows]

        return await self._run(read)

    async def audit(
        self, *, thread_id: str | None = None, after_id: int = 0, limit: int = 1000
    ) -> list[AuditRecord]:
        q = self._sql
        if thread_id is not None and "\x00" in thread_id:
            return []

        def fetch(conn: Connection[Any]) -> list[tuple[Any, ...]]:
            if thread_id is None:
                return conn.execute(q.audit_all, [after_id, limit]).fetchall()
            return conn.execute(q.audit_thread, [thread_id, after_id, limit]).fetchall()

        def read() -> list[AuditRecord]:
            rows = self._read("reading the audit log", fetch)
            return [stored_audit(*row) for row in rows]

        return await self._run(read)

    # -- outbox ---------------------------------------------------------------------------

    @staticmethod
    def _event(row: tuple[Any, ...]) -> OutboxEvent:
        return OutboxEvent.model_validate_json(row[0]).model_copy(
            update={"lease_owner": row[1], "lease_until": row[2]})

    async def outbox_claim(
        self, owner: str, *, now: datetime, until: datetime, limit: int = 20
    ) -> list[OutboxEvent]:
        params = {"owner": owner, "now": now, "until": until, "limit": limit}

        def write() -> list[OutboxEvent]:
            with self._conn("claiming outbox events") as conn:
                rows = conn.execute(self._sql.outbox_claim, params).fetchall()
            events = [self._event(r) for r in rows]
            events.sort(key=lambda e: (e.next_at, e.created_at, e.id))
            return events

        return await self._run(write)

    async def outbox_update(self, event: OutboxEvent, *, leased_by: str | None) -> bool:
        params = {"status": event.status, "next": event.next_at, "owner": event.lease_owner,
                  "until": event.lease_until, "data": outbox_json(event), "id": event.id,
                  "leased_by": leased_by}

        def write() -> bool:
            with self._conn(f"updating outbox event {event.id!r}") as conn:
                return conn.execute(self._sql.outbox_update, params).rowcount == 1

        return await self._run(write)

    async def outbox_get(self, event_id: str) -> OutboxEvent | None:
        def read() -> OutboxEvent | None:
            row = self._read("reading an outbox event", lambda c: c.execute(
                self._sql.outbox_get, [event_id]).fetchone())
            return None if row is None else self._event(row)

        return await self._run(read)

    async def outbox_prune(self, *, before: datetime,
                           statuses: Sequence[str] = ("delivered",)) -> int:
        params = {"before": before, "statuses": list(statuses)}

        def write() -> int:
            with self._conn("pruning the outbox") as conn:
                return conn.execute(self._sql.outbox_prune, params).rowcount

        return await self._run(write)

    async def outbox_list(
        self, *, status: str | None = None, thread_id: str | None = None, limit: int = 100,
        id_prefix: str | None = None,
    ) -> list[OutboxEvent]:
        params = {"status": status, "thread": thread_id, "limit": limit, "prefix": id_prefix}

        def read() -> list[OutboxEvent]:
            rows = self._read("listing outbox events", lambda c: c.execute(
                self._sql.outbox_list, params).fetchall())
            return [self._event(r) for r in rows]

        return await self._run(read)

    # -- run queue (RunQueue) and signals (ChangeSignals) -------------------------------------

    @staticmethod
    def _queued(row: tuple[Any, ...]) -> QueuedRun:
        return QueuedRun(thread_id=row[0], ticket=int(row[1]), attempts=int(row[2]),
                         queued_at=row[3], lease_owner=row[4], lease_until=row[5])

    async def queue_claim(self, owner: str, *, now: datetime, until: datetime,
                          limit: int = 1) -> list[QueuedRun]:
        params = {"owner": owner, "now": now, "until": until, "limit": limit}

        def write() -> list[QueuedRun]:
            with self._conn("claiming queued runs") as conn:
                rows = conn.execute(self._sql.queue_claim, params).fetchall()
            return sorted((self._queued(r) for r in rows),
                          key=lambda r: (r.queued_at, r.thread_id))

        return await self._run(write)

    async def queue_extend(self, owner: str, thread_ids: Sequence[str], *,
                           until: datetime) -> list[str]:
        params = {"owner": owner, "until": until, "ids": list(thread_ids)}

        def write() -> list[str]:
            with self._conn("extending claims of queued runs") as conn:
                return [r[0] for r in conn.execute(self._sql.queue_extend, params).fetchall()]

        return await self._run(write)

    async def queue_release(self, run: QueuedRun, owner: str, *, at: datetime) -> bool:
        params = {"id": run.thread_id, "ticket": run.ticket, "owner": owner, "at": at}

        def write() -> bool:
            with self._conn(f"giving back the queued run of {run.thread_id!r}") as conn:
                return conn.execute(self._sql.queue_release, params).rowcount == 1

        return await self._run(write)

    async def queue_done(self, run: QueuedRun, owner: str) -> bool:
        params = {"id": run.thread_id, "ticket": run.ticket, "owner": owner}

        def write() -> bool:
            with self._conn(f"removing the queued run of {run.thread_id!r}") as conn:
                return conn.execute(self._sql.queue_done, params).rowcount == 1

        return await self._run(write)

    async def queue_list(self, *, limit: int = 100) -> list[QueuedRun]:
        def read() -> list[QueuedRun]:
            rows = self._read("listing queued runs", lambda c: c.execute(
                self._sql.queue_list, [limit]).fetchall())
            return [self._queued(r) for r in rows]

        return await self._run(read)

    def on_signal(self, topic: SignalTopic, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` (from the listening thread) at every ``NOTIFY`` of ``topic`` sent
        by a commit of any process; one connection per checkpointer listens for all of them,
        opened at the first call. Returns a function that stops the callback."""
        return self._listening().add(topic, callback)

    def on_relayed_event(
        self, callback: Callable[[str, dict[str, Any]], None]
    ) -> Callable[[], None]:
        """Call ``callback(thread_id, event)`` (from the listening thread) for every event a
        run in any process relays (:meth:`relay_event`), on the same listening connection as
        the signals."""
        return self._listening().add_events(callback)

    async def relay_event(self, thread_id: str, event: dict[str, Any]) -> None:
        """``NOTIFY`` the event to every listener of this schema (one round trip, outside any
        transaction of the run). A payload over Postgres's limit has its large fields cut."""
        payload = relay_payload(thread_id, event)
        if payload is None:
            return

        def send() -> None:
            with self._conn(f"relaying an event of thread {thread_id!r}", read=True) as conn:
                conn.execute("SELECT pg_notify(%s, %s)", [self._events_channel, payload])

        await self._run(send)

    def _listening(self) -> _Listener:
        with self._open_lock:
            if self._closed:
                raise self._closed_error()
            if self._listener is None:
                self._listener = _Listener(
                    self.listen_dsn, self.dsn, self._channels,
                    {**self._connect_kwargs(), "prepare_threshold": None},
                    redact(self.listen_dsn), events=self._events_channel,
                    secrets=secrets_of(self.listen_dsn))
            listener = self._listener
        if listener.degraded is not None:
            raise StorageError(f"Live updates from Postgres cannot work: {listener.degraded}.")
        return listener

    def stored_bytes(self) -> int:
        """Bytes on disk of the interlock tables of this schema, indexes and TOAST included
        (``pg_total_relation_size``). Dead row versions count until VACUUM reclaims them."""
        with self._conn("measuring storage") as conn:
            row = conn.execute(
                "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relkind = 'r' AND c.relname = ANY(%s)",
                [self.schema, list(TABLES)],
            ).fetchone()
        return int(row[0]) if row else 0

    async def close(self) -> None:
        """Close the pool. Closing twice is harmless; using a closed checkpointer fails."""
        if self._closed:
            return

        def shut() -> None:
            with self._open_lock:
                self._closed = True
                pool, self._pool = self._pool, None
                listener, self._listener = self._listener, None
            if listener is not None:
                listener.stop()
            if pool is not None:
                pool.close()

        await self._run(shut)
        self._executor.shutdown(wait=False)


def channel_name(schema: str, topic: str) -> str:
    """The ``LISTEN`` channel of ``topic`` for the tables in ``schema`` (channels are per
    database; a hash keeps the name short and the schemas of one database apart)."""
    return f"interlock_{hashlib.sha256(schema.encode()).hexdigest()[:16]}_{topic}"


class _Listener:
    """One connection in ``LISTEN`` mode, read by a daemon thread that calls the callbacks of
    each channel. It reconnects after a failure (with a growing pause) and then calls every
    callback once, since signals sent meanwhile are lost.

    At its first connection it checks that signals arrive: it sends a ``NOTIFY`` to itself
    through the main DSN (the path every commit's signal takes) and waits for it. When none
    arrives (a pooler in transaction mode keeps no ``LISTEN``), ``degraded`` says why and the
    listener stops: the callers poll instead."""

    WAIT = 0.5
    """Seconds between checks for ``stop()`` while no signal arrives."""

    PROBE_WAIT = 5.0
    """Seconds the start-up self-test waits for its own ``NOTIFY``."""

    def __init__(self, dsn: str, notify_dsn: str, channels: dict[SignalTopic, str],
                 connect_kwargs: dict[str, Any], where: str, *, events: str,
                 secrets: list[str] | None = None) -> None:
        self._events = events
        self._secrets = secrets or []
        self._event_callbacks: list[Callable[[str, dict[str, Any]], None]] = []
        self._dsn = dsn
        self._notify_dsn = notify_dsn
        self._topics = {name: topic for topic, name in channels.items()}
        self._connect_kwargs = connect_kwargs
        self._where = where
        self.where = where
        """The server it listens to, without the password (for messages)."""
        self._callbacks: dict[SignalTopic, list[Callable[[], None]]] = {t: [] for t in channels}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self.degraded: str | None = None
        """Why live signals cannot work here (None: they do, or nothing is known yet)."""
        self.disconnected: str | None = None
        """Why the listening connection is down right now (None: it listens, or it has not
        tried yet); changes are seen at the next poll meanwhile."""
        self._thread = threading.Thread(target=self._main, daemon=True,
                                        name="interlock-postgres-listen")
        self._thread.start()
        # listening (and checked) before the first signal is expected
        self._ready.wait(connect_kwargs["connect_timeout"] * 2 + self.PROBE_WAIT + 1)

    def add(self, topic: SignalTopic, callback: Callable[[], None]) -> Callable[[], None]:
        with self._lock:
            self._callbacks[topic].append(callback)

        def remove() -> None:
            with self._lock, contextlib.suppress(ValueError):
                self._callbacks[topic].remove(callback)

        return remove

    def add_events(self, callback: Callable[[str, dict[str, Any]], None]) -> Callable[[], None]:
        with self._lock:
            self._event_callbacks.append(callback)

        def remove() -> None:
            with self._lock, contextlib.suppress(ValueError):
                self._event_callbacks.remove(callback)

        return remove

    def _relayed(self, payload: str) -> None:
        try:
            data = json.loads(payload)
            thread_id, event = str(data["thread_id"]), dict(data["event"])
        except (ValueError, KeyError, TypeError):
            log.warning("a relayed event could not be read: %.200r", payload)
            return
        with self._lock:
            todo = list(self._event_callbacks)
        for cb in todo:
            try:
                cb(thread_id, event)
            except Exception:
                log.exception("a relayed-event callback failed")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(self.WAIT * 4)

    def _fire(self, topics: Sequence[SignalTopic]) -> None:
        with self._lock:
            todo = [cb for t in topics for cb in self._callbacks.get(t, ())]
        for cb in todo:
            try:
                cb()
            except Exception:
                log.exception("a Postgres signal callback failed")

    def _probe(self, conn: Connection[Any]) -> bool:
        """Send a ``NOTIFY`` to a channel of this connection's own through the main DSN and
        wait for it. The channel's name is new, so nothing else is ever sent to it: behind a
        pooler in transaction mode, the pooled connection this ``LISTEN`` lands on gets no
        other signal."""
        import uuid

        import psycopg
        from psycopg import sql

        channel = f"interlock_probe_{uuid.uuid4().hex[:16]}"
        conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
        with psycopg.connect(self._notify_dsn, **self._connect_kwargs) as sender:
            sender.execute("SELECT pg_notify(%s, '')", [channel])
        deadline = time.monotonic() + self.PROBE_WAIT
        try:
            while (left := deadline - time.monotonic()) > 0:
                for n in conn.notifies(timeout=min(left, self.WAIT)):
                    if n.channel == channel:
                        return True
            return False
        finally:
            with contextlib.suppress(Exception):
                conn.execute(sql.SQL("UNLISTEN {}").format(sql.Identifier(channel)))

    def _main(self) -> None:
        import psycopg
        from psycopg import sql

        pause = 0.1
        first = True
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._dsn, **self._connect_kwargs) as conn:
                    # a listening connection is idle between signals: a server-wide
                    # idle_session_timeout would end it every few seconds
                    with contextlib.suppress(psycopg.Error):
                        conn.execute("SET idle_session_timeout = 0")
                    # the self-test comes before any LISTEN of the schema's channels: behind a
                    # pooler in transaction mode each statement may run on another server
                    # connection, and a LISTEN left on a pooled connection would have every
                    # commit's signal sent to whichever client holds it next (PgBouncer logs a
                    # warning for each one that arrives between clients)
                    if first and not self._probe(conn):
                        self.degraded = (
                            f"a NOTIFY sent to itself did not reach the LISTEN connection to "
                            f"{self._where} within {self.PROBE_WAIT:g} s, so other processes' "
                            f"changes cannot arrive live. The usual cause is a pooler in "
                            f"transaction mode (PgBouncer pool_mode=transaction), which keeps "
                            f"no LISTEN between transactions: give a direct URL to the server "
                            f"for listening (listen_dsn= / INTERLOCK_LISTEN_DB), or use "
                            f"session mode")
                        log.warning("live updates from Postgres cannot work: %s. Changes "
                                    "are picked up by polling instead.", self.degraded)
                        self._ready.set()
                        return
                    for name in [*self._topics, self._events]:
                        conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(name)))
                    if self.disconnected is not None:
                        log.warning("listening for changes on Postgres at %s again",
                                    self._where)
                    self.disconnected = None
                    self._ready.set()
                    if not first:  # signals sent while disconnected are lost: wake everyone
                        self._fire(list(self._topics.values()))
                    first, pause = False, 0.1
                    while not self._stop.is_set():
                        for n in conn.notifies(timeout=self.WAIT):
                            topic = self._topics.get(n.channel)
                            if topic is not None:
                                self._fire([topic])
                            elif n.channel == self._events:
                                self._relayed(n.payload)
            except Exception as exc:
                if self._stop.is_set():
                    return
                said = scrub(str(exc).strip(), self._secrets).splitlines()
                reason = said[0] if said else type(exc).__name__
                # the first failure, and each new one, at warning; its repeats at debug
                log.log(logging.DEBUG if reason == self.disconnected else logging.WARNING,
                        "listening for changes on Postgres at %s failed (%s); reconnecting "
                        "in %.1f s (until then changes are seen at the next poll)",
                        self._where, reason, pause)
                self.disconnected = reason
                self._ready.set()
                self._stop.wait(pause)
                pause = min(pause * 2, 5.0)


RELAY_BYTES = 7900
"""The largest relayed payload (Postgres refuses a ``NOTIFY`` payload of 8000 bytes)."""


def relay_payload(thread_id: str, event: dict[str, Any]) -> str | None:
    """The ``NOTIFY`` payload of a relayed event: JSON ``{"thread_id", "event"}``. When it is
    too long, the event's texts and arguments are cut to what fits (``"cut": true``); None
    when even its skeleton does not fit."""
    whole = json.dumps({"thread_id": thread_id, "event": event}, default=str)
    if len(whole.encode()) <= RELAY_BYTES:
        return whole
    skeleton: dict[str, Any] = {k: v for k, v in event.items()
                                if isinstance(v, str | int | float | bool) and len(str(v)) <= 200}
    for key in ("call", "result"):  # a tool's name and call id, without arguments or content
        part = event.get(key)
        if isinstance(part, dict):
            skeleton[key] = {k: part[k] for k in ("id", "name", "tool_call_id", "status")
                             if isinstance(part.get(k), str) and len(part[k]) <= 200}
    cut = json.dumps({"thread_id": thread_id, "event": {**skeleton, "cut": True}}, default=str)
    return cut if len(cut.encode()) <= RELAY_BYTES else None


def _readable(conn: Connection[Any]) -> bool:
    """Whether data (or end of file) is waiting on an idle connection's socket; no I/O."""
    try:
        fd = conn.fileno()
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLPRI)
            return bool(poller.poll(0))
        return bool(select.select([fd], [], [], 0)[0])
    except Exception:
        return True  # cannot tell: check with a round trip


class _Statements:
    """The SQL of one schema, composed once with the schema name safely quoted."""

    def __init__(self, schema: str) -> None:
        from psycopg import sql

        self._schema = sql.Identifier(schema)
        self.create_schema = sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(self._schema)
        f = self.fmt
        self.create_meta = f("CREATE TABLE IF NOT EXISTS {s}.interlock_meta "
                             "(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self.get_version = f("SELECT value FROM {s}.interlock_meta WHERE key = 'schema_version'")
        self.set_version = f("INSERT INTO {s}.interlock_meta (key, value) "
                             "VALUES ('schema_version', %s) "
                             "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value")
        self.add_store_id = f("INSERT INTO {s}.interlock_meta (key, value) "
                              "VALUES ('store_id', %s) ON CONFLICT (key) DO NOTHING")
        self.get_store_id = f("SELECT value FROM {s}.interlock_meta WHERE key = 'store_id'")
        # part 0: the thread row; 1: its messages; 2: the journal rows of its open turn
        self.load = f(
            "SELECT 0, 0, data FROM {s}.interlock_threads WHERE thread_id = %(id)s "
            "UNION ALL "
            "SELECT 1, seq, data FROM {s}.interlock_messages WHERE thread_id = %(id)s "
            "AND seq >= %(after)s "
            "UNION ALL "
            "SELECT 2, j.position, j.data FROM {s}.interlock_journal j "
            "JOIN {s}.interlock_threads t ON t.thread_id = j.thread_id "
            "WHERE j.thread_id = %(id)s AND j.turn = t.turn "
            "ORDER BY 1, 2"
        )
        self.load_journal = f("SELECT data FROM {s}.interlock_journal WHERE thread_id = %s "
                              "ORDER BY turn, position")
        # A change is one statement: the thread row's compare-and-set, then — only if it
        # matched (every insert reads its RETURNING row) — the messages, the journal rows and
        # the audit rows. The advisory lock makes audit ids follow commit order, or a reader
        # paging with after_id could skip a row committed late with a smaller id. The arrays
        # travel in binary (``%b``): the text form escapes every quote of the JSON.
        rest = (
            "msgs AS (INSERT INTO {s}.interlock_messages (thread_id, seq, data) "
            "SELECT th.thread_id, m.seq, m.data FROM th, "
            "unnest(%(m_seq)b::int[], %(m_data)b::text[]) AS m(seq, data)), "
            "jrnl AS (INSERT INTO {s}.interlock_journal "
            "(thread_id, tool_call_id, turn, position, state, data) "
            "SELECT th.thread_id, j.id, j.turn, j.pos, j.state, j.data FROM th, "
            "unnest(%(j_id)b::text[], %(j_turn)b::int[], %(j_pos)b::int[], "
            "%(j_state)b::text[], %(j_data)b::text[]) AS j(id, turn, pos, state, data) "
            "ON CONFLICT (thread_id, tool_call_id) DO UPDATE SET "
            "turn = EXCLUDED.turn, position = EXCLUDED.position, "
            "state = EXCLUDED.state, data = EXCLUDED.data), "
            "lk AS (SELECT pg_advisory_xact_lock(hashtext(%(lock)s)) FROM th "
            "WHERE cardinality(%(a_seq)b::int[]) > 0), "
            "aud AS (INSERT INTO {s}.interlock_audit (thread_id, seq, data) "
            "SELECT th.thread_id, a.seq, a.data FROM th, lk, "
            "unnest(%(a_seq)b::int[], %(a_data)b::text[]) AS a(seq, data)), "
            "obx AS (INSERT INTO {s}.interlock_outbox "
            "(id, thread_id, status, next_at, created_at, data) "
            "SELECT o.id, th.thread_id, o.status, o.next::timestamptz, o.created::timestamptz, "
            "o.data FROM th, unnest(%(o_id)b::text[], %(o_status)b::text[], "
            "%(o_next)b::text[], %(o_created)b::text[], %(o_data)b::text[]) "
            "AS o(id, status, next, created, data) ON CONFLICT (id) DO NOTHING), "
            # who may read the thread: keys it lost go, the others are upserted (two
            # statements on disjoint rows: one statement cannot change a row twice)
            "rdel AS (DELETE FROM {s}.interlock_readers r USING th "
            "WHERE r.thread_id = th.thread_id AND NOT (r.key = ANY(%(r_keys)s::text[]))), "
            "rins AS (INSERT INTO {s}.interlock_readers (key, thread_id, status, updated_at) "
            "SELECT k.key, th.thread_id, %(status)s, %(updated_at)s FROM th, "
            "unnest(%(r_keys)s::text[]) AS k(key) ON CONFLICT (thread_id, key) DO UPDATE SET "
            "status = EXCLUDED.status, updated_at = EXCLUDED.updated_at)"
        )
        self._commit_heads = {
            True: "WITH th AS (INSERT INTO {s}.interlock_threads "
            "(thread_id, status, version, updated_at, turn, data, deadline, search, parent_id, "
            "sweep, metadata) VALUES (%(id)s, %(status)s, %(version)s, %(updated_at)s, "
            "%(turn)s, %(data)s, %(deadline)s, %(search)s, %(parent)s, %(sweep)s, "
            "%(meta)s::jsonb) "
            "ON CONFLICT (thread_id) DO NOTHING RETURNING thread_id), ",
            False: "WITH th AS (UPDATE {s}.interlock_threads "
            "SET status = %(status)s, version = %(version)s, updated_at = %(updated_at)s, "
            "turn = %(turn)s, data = %(data)s, deadline = %(deadline)s, search = %(search)s, "
            "parent_id = %(parent)s, sweep = %(sweep)s, metadata = %(meta)s::jsonb, "
            "change_xid = pg_current_xact_id() "
            "WHERE thread_id = %(id)s AND version = %(expected)s "
            "RETURNING thread_id), ",
        }
        self._commit_rest = rest
        self._commits: dict[tuple[bool, bool, bool], Composed] = {}
        self.audit_all = f("SELECT id, thread_id, seq, data FROM {s}.interlock_audit "
                           "WHERE id > %s ORDER BY id LIMIT %s")
        self.audit_thread = f("SELECT id, thread_id, seq, data FROM {s}.interlock_audit "
                              "WHERE thread_id = %s AND id > %s ORDER BY id LIMIT %s")
        self.snapshot_xmin = f("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")
        self.changes = f(
            "SELECT change_xid::text::bigint, thread_id, data FROM {s}.interlock_threads "
            "WHERE (change_xid, thread_id) > (%s::text::xid8, %s) "
            "AND change_xid < %s::text::xid8 ORDER BY change_xid, thread_id LIMIT %s")
        self.changes_held = f("SELECT EXISTS (SELECT 1 FROM {s}.interlock_threads "
                              "WHERE change_xid >= %s::text::xid8)")
        self.due = f("SELECT thread_id FROM {s}.interlock_threads WHERE deadline IS NOT NULL "
                     "AND deadline <= %s ORDER BY deadline LIMIT %s")
        self.sweep_page = f("SELECT data FROM {s}.interlock_threads WHERE sweep "
                            "AND thread_id > %s ORDER BY thread_id LIMIT %s")
        self._lists: dict[tuple[Any, ...], Composed] = {}
        self.outbox_claim = f(
            "UPDATE {s}.interlock_outbox SET lease_owner = %(owner)s, lease_until = %(until)s "
            "WHERE id IN (SELECT id FROM {s}.interlock_outbox WHERE status = 'pending' "
            "AND next_at <= %(now)s AND (lease_until IS NULL OR lease_until < %(now)s) "
            "ORDER BY next_at, created_at, id LIMIT %(limit)s FOR UPDATE SKIP LOCKED) "
            "RETURNING data, lease_owner, lease_until"
        )
        self.outbox_update = f(
            "UPDATE {s}.interlock_outbox SET status = %(status)s, next_at = %(next)s, "
            "lease_owner = %(owner)s, lease_until = %(until)s, data = %(data)s "
            "WHERE id = %(id)s AND lease_owner IS NOT DISTINCT FROM %(leased_by)s"
        )
        self.queue_claim = f(QUEUE_CLAIM)
        self.queue_extend = f(QUEUE_EXTEND)
        self.queue_release = f(QUEUE_RELEASE)
        self.queue_done = f(QUEUE_DONE)
        self.queue_list = f(QUEUE_LIST)
        self.outbox_prune = f(
            "DELETE FROM {s}.interlock_outbox o WHERE o.created_at < %(before)s "
            "AND o.status = ANY(%(statuses)s) AND NOT ((o.id LIKE 'evt\\_%%\\_raised' OR "
            "o.id LIKE 'evt\\_%%\\_escalated%%') AND EXISTS (SELECT 1 FROM {s}.interlock_threads t "
            "WHERE t.thread_id = o.thread_id AND t.status = 'interrupted'))")
        self.outbox_get = f("SELECT data, lease_owner, lease_until FROM {s}.interlock_outbox "
                            "WHERE id = %s")
        self.outbox_list = f(
            "SELECT data, lease_owner, lease_until FROM {s}.interlock_outbox "
            "WHERE (%(status)s::text IS NULL OR status = %(status)s) "
            "AND (%(thread)s::text IS NULL OR thread_id = %(thread)s) "
            "AND (%(prefix)s::text IS NULL OR starts_with(id, %(prefix)s)) "
            "ORDER BY created_at, id LIMIT %(limit)s"
        )

    def commit(self, new: bool, enqueue: bool, notify: bool) -> Composed:
        """The commit statement: a new thread or the compare-and-set of an existing one; with
        ``enqueue`` it also puts the thread on the run queue (a new ticket, any claim
        dropped); with ``notify`` it sends the change signal (and the queue signal) at
        commit. All in the one statement, so in the one transaction."""
        key = (new, enqueue, notify)
        if key not in self._commits:
            text = self._commit_heads[new] + self._commit_rest
            if enqueue:
                text += ENQUEUE_CTE
            final = "SELECT count(*) FROM th"
            if notify:
                signals = "pg_notify(%(ch_changes)s, '')" + (
                    ", pg_notify(%(ch_queue)s, '')" if enqueue else "")
                text += f", sig AS (SELECT {signals} FROM th)"
                final += ", sig"  # a plain CTE runs only when read
            self._commits[key] = self.fmt(text + " " + final)
        return self._commits[key]

    def fmt(self, text: str, **names: str) -> Composed:
        """``text`` with ``{s}`` the schema and each other ``{name}`` an identifier."""
        from psycopg import sql

        return sql.SQL(text).format(s=self._schema,
                                    **{k: sql.Identifier(v) for k, v in names.items()})

    def select(self, what: str, *, status: str | None, search: str | None,
               readers: Sequence[str] | None = None, before: datetime | None = None,
               before_id: str | None = None, limit: int | None = None,
               top_level: bool = False,
               metadata: dict[str, Any] | None = None) -> tuple[Composed, dict[str, Any]]:
        """The statement and parameters reading ``what`` (columns of ``t``, the thread rows)
        of the threads that pass the filters, newest first, at most ``limit``. A search text
        of three characters or more is a ``LIKE`` that the trigram index answers when few
        threads hold it (the planner chooses); a metadata filter is a ``jsonb`` containment
        that the metadata's GIN index answers; a reviewer's listing reads, for each of its
        read keys, the newest rows of that key's range of the readers index."""
        needle = search_key(search) if search else ""
        meta = metadata_index(metadata)
        params: dict[str, Any] = {"status": status, "needle": needle, "limit": limit,
                                  "meta": meta,
                                  "before": before, "before_id": before_id,
                                  "keys": list(readers or ()),
                                  "like": "%" + needle.replace("\\", "\\\\").replace(
                                      "%", "\\%").replace("_", "\\_") + "%"}
        cursor = before is not None and before_id is not None
        shape = (what, status is not None, len(needle) >= 3 if needle else None,
                 readers is not None, before is not None, cursor, limit is not None, top_level,
                 meta is not None)
        if shape not in self._lists:
            self._lists[shape] = self._select(what, *shape[1:])
        return self._lists[shape], params

    def _select(self, what: str, by_status: bool, like: bool | None, by_readers: bool,
                by_before: bool, by_cursor: bool, limited: bool, top_level: bool,
                by_metadata: bool) -> Composed:
        def before(alias: str) -> str:
            if by_cursor:
                return f"({alias}.updated_at, {alias}.thread_id) < (%(before)s, %(before_id)s)"
            return f"{alias}.updated_at < %(before)s"

        text = {None: "", True: "t.search LIKE %(like)s",
                False: "strpos(t.search, %(needle)s) > 0"}
        where = [w for w, on in (("t.status = %(status)s", by_status),
                                 (text[like], like is not None), (before("t"), by_before),
                                 ("t.parent_id IS NULL", top_level),
                                 ("t.metadata @> %(meta)s::jsonb", by_metadata)) if on]
        if by_readers and (like or by_metadata):
            where.append("EXISTS (SELECT 1 FROM {s}.interlock_readers r WHERE "
                         "r.thread_id = t.thread_id AND r.key = ANY(%(keys)s::text[]))")
        elif by_readers:
            sub = [w for w, on in (("r.status = %(status)s", by_status),
                                   (before("r"), by_before),
                                   ("strpos(u.search, %(needle)s) > 0", like is not None),
                                   ("u.parent_id IS NULL", top_level)) if on]
            join = (" JOIN {s}.interlock_threads u ON u.thread_id = r.thread_id"
                    if like is not None or top_level else "")
            where.append(
                "t.thread_id IN (SELECT x.thread_id FROM unnest(%(keys)s::text[]) AS k(key) "
                "CROSS JOIN LATERAL (SELECT r.thread_id FROM {s}.interlock_readers r" + join
                + " WHERE " + " AND ".join(["r.key = k.key", *sub])
                + " ORDER BY r.updated_at DESC, r.thread_id DESC"
                + (" LIMIT %(limit)s" if limited else "") + ") x)")
        text_sql = f"SELECT {what} FROM {{s}}.interlock_threads t"
        if where:
            text_sql += " WHERE " + " AND ".join(where)
        if limited:
            text_sql += " ORDER BY t.updated_at DESC, t.thread_id DESC LIMIT %(limit)s"
        return self.fmt(text_sql)
