"""Storage that fails: every failure is a ``StorageError`` that names its cause, nothing false
is recorded, and the same process continues the thread as soon as the store works again.

Failures come from three places: injected at the storage seam (a checkpointer that refuses
commits from a chosen one on, as a store that went away would), real SQLite conditions (a
full tmpfs, a read-only remount, a lock held by another connection) and values a store cannot
encode.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import StoreFactory, unavailable
from interlock import (
    Agent,
    CallState,
    Checkpointer,
    HumanInTheLoop,
    InterruptOn,
    ScriptedModel,
    SqliteCheckpointer,
    StorageError,
    tool,
)
from interlock.storage.base import Commit


class BrokenStore:
    """A checkpointer whose commits fail from the first one ``breaks`` matches until
    :meth:`heal` (reads keep working, as with a full disk)."""

    durable = True

    def __init__(self, inner: Checkpointer, breaks: Callable[[Commit], bool]) -> None:
        self.inner = inner
        self.breaks = breaks
        self.broken = False
        self.refused = 0

    def heal(self) -> None:
        self.broken = False
        self.breaks = lambda _: False

    async def commit(self, change: Commit, *, expected_version: int | None) -> None:
        if self.broken or self.breaks(change):
            self.broken = True
            self.refused += 1
            raise StorageError("injected: the store refuses every write")
        await self.inner.commit(change, expected_version=expected_version)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def state_is(state: CallState) -> Callable[[Commit], bool]:
    return lambda change: any(e.state == state for e in change.journal)


class Counter:
    def __init__(self) -> None:
        self.calls = 0


def make_agent(store: Checkpointer, ran: Counter, **kw: Any) -> Agent:
    @tool
    def charge(amount: int) -> str:
        """Charge an amount."""
        ran.calls += 1
        return f"charged {amount}"

    def reply(messages: Any) -> Any:
        if messages[-1].role == "tool":
            return f"done: {messages[-1].content}"
        return {"name": "charge", "args": {"amount": 5}, "id": "c1"}

    return Agent(model=ScriptedModel(reply), tools=[charge],
                 middleware=[HumanInTheLoop({"charge": True})], checkpointer=store, **kw)


def outcome_unknown_rows(agent: Agent, thread_id: str) -> int:
    return sum(1 for r in agent.audit(thread_id) if r.kind == "outcome_unknown")


@pytest.mark.parametrize("where", ["running", "result"])
def test_a_store_failing_mid_run_is_recovered_by_the_same_process_at_once(
    stores: StoreFactory, where: str,
) -> None:
    ran = Counter()
    store = BrokenStore(stores(), state_is(
        CallState.RUNNING if where == "running" else CallState.SUCCEEDED))
    agent = make_agent(store, ran)  # the default lease (5 min) must not matter
    assert agent.invoke("charge it", thread_id="t").interrupted
    with pytest.raises(StorageError, match="injected"):
        agent.resume("t", [{"type": "approve"}])
    assert ran.calls == (0 if where == "running" else 1)
    store.heal()
    # no ThreadBusy naming this very process, no waiting for the lease
    result = agent.recover("t")
    assert result.status == "completed" and result.output == "done: charged 5"
    assert ran.calls == 1
    [entry] = agent.journal("t")
    assert entry.state == CallState.SUCCEEDED and entry.attempts == 1
    # this process knew what happened: nobody is told the outcome is unknown
    assert outcome_unknown_rows(agent, "t") == 0


def test_new_input_after_a_failure_takes_the_thread_back_in_the_same_process(
    stores: StoreFactory,
) -> None:
    ran = Counter()
    store = BrokenStore(stores(), state_is(CallState.RUNNING))
    agent = make_agent(store, ran)
    agent.invoke("charge it", thread_id="t")
    with pytest.raises(StorageError):
        agent.resume("t", [{"type": "approve"}])
    store.heal()
    result = agent.invoke("and now?", thread_id="t")  # recovers first, then takes the message
    assert result.status == "interrupted"  # the new message's call waits for review again
    assert ran.calls == 1
    assert outcome_unknown_rows(agent, "t") == 0


# ---------------------------------------------------------------------- real SQLite failures


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A small tmpfs at ``path`` (a real file system that can fill up or turn read-only)."""
    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        unavailable("The full-disk and read-only SQLite tests",
                    f"they need a tmpfs (mount -t tmpfs, as root) and it cannot be mounted "
                    f"here ({done.stderr.strip()})")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(directory: Path) -> Path:
    """Write to ``directory`` until its file system is full."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)
    return filler


def test_sqlite_on_a_full_disk(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "1m") as disk:
        ran = Counter()
        agent = make_agent(SqliteCheckpointer(disk / "t.db"), ran)
        assert agent.invoke("charge it", thread_id="t").interrupted
        filler = fill(disk)
        with pytest.raises(StorageError, match="full") as err:
            agent.resume("t", [{"type": "approve"}])
        assert "no transaction is active" not in str(err.value)
        assert ran.calls <= 1
        filler.unlink()
        result = agent.recover("t")
        if result.interrupted:  # the decision itself was not stored: nothing ran
            assert ran.calls == 0
            result = agent.resume("t", [{"type": "approve"}])
        assert result.status == "completed"
        assert ran.calls == 1
        assert outcome_unknown_rows(agent, "t") == 0
        agent.close()


def test_a_disk_filling_up_while_the_tool_runs(tmp_path: Path) -> None:
    """The result commit meets a really full disk; the same process stores the result it got
    once there is space again, without waiting for its lease and without asking anyone."""
    with tmpfs(tmp_path / "disk", "1m") as disk:
        fillers: list[Path] = []

        @tool
        def export(rows: int) -> str:
            """Export rows (and fill the disk doing it)."""
            fillers.append(fill(disk))
            return f"exported {rows}"

        agent = Agent(model=ScriptedModel([{"name": "export", "args": {"rows": 3}}, "ok"]),
                      tools=[export], checkpointer=SqliteCheckpointer(disk / "t.db"))
        with pytest.raises(StorageError, match="full"):
            agent.invoke("export", thread_id="t")
        fillers[0].unlink()
        result = agent.recover("t")
        assert result.status == "completed" and len(fillers) == 1
        [entry] = agent.journal("t")
        assert entry.state == CallState.SUCCEEDED and entry.result is not None
        assert entry.result.content == "exported 3"
        assert outcome_unknown_rows(agent, "t") == 0
        agent.close()


class FillsDiskBeforeRunning:
    """Fills the (real) disk just before the ``running`` commit reaches SQLite."""

    def __init__(self, inner: SqliteCheckpointer, disk: Path) -> None:
        self.inner, self.disk = inner, disk
        self.filler: Path | None = None

    async def commit(self, change: Commit, *, expected_version: int | None) -> None:
        if self.filler is None and state_is(CallState.RUNNING)(change):
            self.filler = fill(self.disk)
        await self.inner.commit(change, expected_version=expected_version)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_full_disk_on_the_running_commit(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "1m") as disk:
        ran = Counter()
        store = FillsDiskBeforeRunning(SqliteCheckpointer(disk / "t.db"), disk)
        agent = make_agent(store, ran)  # type: ignore[arg-type]
        assert agent.invoke("charge it", thread_id="t").interrupted
        with pytest.raises(StorageError, match="full"):
            agent.resume("t", [{"type": "approve"}])
        assert ran.calls == 0  # the call did not start
        assert store.filler is not None
        store.filler.unlink()
        result = agent.recover("t")  # the decision had been stored: the call runs now
        assert result.status == "completed" and ran.calls == 1
        assert outcome_unknown_rows(agent, "t") == 0
        agent.close()


def test_sqlite_on_a_read_only_file_system(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "4m") as disk:
        ran = Counter()
        agent = make_agent(SqliteCheckpointer(disk / "t.db"), ran)
        assert agent.invoke("charge it", thread_id="t").interrupted
        agent.close()
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        agent = make_agent(SqliteCheckpointer(disk / "t.db"), ran)  # e.g. a restart
        with pytest.raises(StorageError, match="read-only"):
            agent.resume("t", [{"type": "approve"}])
        assert ran.calls == 0
        agent.close()
        subprocess.run(["mount", "-o", "remount,rw", str(disk)], check=True)
        agent = make_agent(SqliteCheckpointer(disk / "t.db"), ran)
        result = agent.resume("t", [{"type": "approve"}])  # nothing was stored: answer again
        assert result.status == "completed" and ran.calls == 1
        agent.close()


def test_sqlite_read_only_connection(tmp_path: Path) -> None:
    """SQLITE_READONLY itself: the connection may read but not write (query_only)."""
    ran = Counter()
    store = SqliteCheckpointer(tmp_path / "t.db")
    agent = make_agent(store, ran)
    assert agent.invoke("charge it", thread_id="t").interrupted
    store._with_conn(lambda c: c.execute("PRAGMA query_only=ON"))
    with pytest.raises(StorageError, match="read-only"):
        agent.resume("t", [{"type": "approve"}])
    store._with_conn(lambda c: c.execute("PRAGMA query_only=OFF"))
    assert agent.resume("t", [{"type": "approve"}]).status == "completed"
    assert ran.calls == 1


def test_sqlite_full_by_its_page_limit(tmp_path: Path) -> None:
    """The same SQLITE_FULL without a mount: the file may not grow past max_page_count."""
    ran = Counter()
    store = SqliteCheckpointer(tmp_path / "t.db")
    agent = make_agent(store, ran)
    assert agent.invoke("charge it", thread_id="t").interrupted
    pages = store._with_conn(lambda c: c.execute("PRAGMA page_count").fetchone()[0])
    store._with_conn(lambda c: c.execute(f"PRAGMA max_page_count={pages}"))
    big = "x" * 100_000
    with pytest.raises(StorageError, match="full"):
        agent.invoke(big, thread_id="other")
    store._with_conn(lambda c: c.execute("PRAGMA max_page_count=1073741823"))
    assert agent.resume("t", [{"type": "approve"}]).status == "completed"
    assert ran.calls == 1


def test_sqlite_locked_by_another_connection(tmp_path: Path) -> None:
    ran = Counter()
    path = tmp_path / "t.db"
    agent = make_agent(SqliteCheckpointer(path, busy_timeout=0.2), ran)
    assert agent.invoke("charge it", thread_id="t").interrupted
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process keeps the write lock
    try:
        with pytest.raises(StorageError, match="locked by another connection"):
            agent.resume("t", [{"type": "approve"}])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert ran.calls == 0
    assert agent.resume("t", [{"type": "approve"}]).status == "completed"
    assert ran.calls == 1


def test_a_new_file_opened_by_many_connections_at_once_works_for_each(tmp_path: Path) -> None:
    # turning a new file to WAL needs it to itself: SQLite refuses at once, without waiting,
    # while another connection does the same; each connection waits its turn instead
    import threading

    for round_ in range(40):
        path = tmp_path / f"r{round_}.db"
        stores = [SqliteCheckpointer(path) for _ in range(8)]
        barrier = threading.Barrier(len(stores))
        errors: list[BaseException] = []

        def first_use(store: SqliteCheckpointer, barrier: threading.Barrier = barrier,
                      errors: list[BaseException] = errors) -> None:
            barrier.wait()
            try:
                asyncio.run(store.list_threads())
            except BaseException as exc:
                errors.append(exc)

        workers = [threading.Thread(target=first_use, args=(s,)) for s in stores]
        for w in workers:
            w.start()
        for w in workers:
            w.join(60)
        for s in stores:
            asyncio.run(s.close())
        assert errors == [], f"round {round_}: {errors}"
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_new_file_being_written_by_another_connection_is_waited_for(tmp_path: Path) -> None:
    # while another connection holds a write lock, SQLite refuses the change to WAL at once
    # (no busy wait); the store waits for up to busy_timeout like any write
    import threading

    path = tmp_path / "held.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE other (x)")
    holder.execute("BEGIN IMMEDIATE")
    threading.Timer(0.4, lambda: holder.execute("ROLLBACK")).start()
    store = SqliteCheckpointer(path, busy_timeout=10)
    started = time.monotonic()
    assert asyncio.run(store.list_threads()) == []
    assert time.monotonic() - started >= 0.3
    asyncio.run(store.close())
    holder.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    # held for longer than busy_timeout: a clear error after about that long, then it works
    other = tmp_path / "other.db"
    holder = sqlite3.connect(other, isolation_level=None)
    holder.execute("CREATE TABLE other (x)")
    holder.execute("BEGIN IMMEDIATE")
    try:
        late = SqliteCheckpointer(other, busy_timeout=0.5)
        started = time.monotonic()
        with pytest.raises(StorageError, match="locked by another connection"):
            asyncio.run(late.list_threads())
        assert 0.4 <= time.monotonic() - started < 10
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert asyncio.run(late.list_threads()) == []
    asyncio.run(late.close())


# ---------------------------------------------------------------------- unstorable results


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque>"


def test_a_result_with_a_lone_surrogate_is_stored_escaped(stores: StoreFactory) -> None:
    @tool
    def fetch() -> str:
        """Fetch something."""
        return "half a pair: \ud800"

    agent = Agent(model=ScriptedModel([{"name": "fetch", "args": {}, "id": "f1"}, "ok"]),
                  tools=[fetch], checkpointer=stores())
    assert agent.invoke("go", thread_id="t").status == "completed"
    [entry] = agent.journal("t")
    assert entry.state == CallState.SUCCEEDED and entry.result is not None
    assert entry.result.content.startswith("half a pair: \\ud800")
    assert outcome_unknown_rows(agent, "t") == 0


@pytest.mark.parametrize("value", [Opaque(), b"\xff\xfe"], ids=["object", "bytes"])
def test_a_result_that_cannot_be_stored_is_recorded_as_such(
    stores: StoreFactory, value: Any,
) -> None:
    @tool
    def fetch() -> Any:
        """Fetch something."""
        return value

    agent = Agent(model=ScriptedModel([{"name": "fetch", "args": {}, "id": "f1"}, "ok"]),
                  tools=[fetch], checkpointer=stores())
    result = agent.invoke("go", thread_id="t")
    assert result.status == "completed"
    [entry] = agent.journal("t")
    assert entry.state == CallState.FAILED and entry.result is not None
    assert "finished, but its result could not be stored" in entry.result.content
    assert outcome_unknown_rows(agent, "t") == 0
    # the thread stays usable
    assert agent.get_thread("t").status == "completed"


# ---------------------------------------------------------------------- paging


def test_threads_sharing_one_timestamp_are_paged_without_gaps(stores: StoreFactory) -> None:
    """1,000 thread rows with the same ``updated_at``, listed 37 at a time: each exactly once."""
    from interlock import Interrupt, ThreadRecord
    from interlock.paging import iter_threads

    at = datetime(2026, 1, 1, tzinfo=UTC)
    store = stores()

    async def go() -> list[str]:
        for n in range(1000):
            intr = Interrupt(id=f"i{n}", kind="review", created_at=at,
                             value={"action_requests": [], "review_configs": []})
            await store.commit(Commit(thread=ThreadRecord(
                thread_id=f"t{n:04d}", status="interrupted", version=1, created_at=at,
                updated_at=at, pending=[intr])), expected_version=None)
        return [r.thread_id async for r in iter_threads(store.list_threads,
                                                         status="interrupted", page=37)]

    listed = asyncio.run(go())
    assert listed == sorted((f"t{n:04d}" for n in range(1000)), reverse=True)


def _charged(amount: int) -> str:
    return "charged"


@pytest.mark.parametrize("backend", ["memory", "sqlite",
                                     pytest.param("postgres", marks=pytest.mark.slow)],
                         indirect=True)
def test_a_thousand_threads_with_one_timestamp_are_all_listed_and_expired(
    stores: StoreFactory,
) -> None:
    # durability is not what is tested here: commits skip the wait for the disk
    if stores.kind == "sqlite":
        store: Checkpointer = SqliteCheckpointer(stores.sqlite_path, synchronous="OFF")
    elif stores.kind == "postgres":
        from conftest import PG_DSN
        from interlock import PostgresCheckpointer

        store = PostgresCheckpointer(f"{PG_DSN}?options=-csynchronous_commit%3Doff",
                                     schema=stores.pg_schema)
        stores.made.append(store)
    else:
        store = stores()
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    agent = Agent(
        model=ScriptedModel(lambda m: "ok" if m[-1].role == "tool" else
                            {"name": "charge", "args": {"amount": 1}}),
        tools=[tool(_charged, name="charge", description="Charge.")],
        middleware=[HumanInTheLoop({"charge": InterruptOn(
            expires_after=timedelta(minutes=1))})],
        checkpointer=store, clock=lambda: now[0])
    ids = {f"t{n:04d}" for n in range(1000)}
    for tid in ids:
        agent.invoke("charge", thread_id=tid)
    rows = list(agent.iter_threads(status="interrupted", page=64))
    assert len(rows) == 1000 and {r.thread_id for r in rows} == ids
    assert {r.updated_at for r in rows} == {now[0]}
    now[0] += timedelta(minutes=2)
    results = agent.expire_due()
    assert len(results) == 1000 and all(r.status == "completed" for r in results)
    assert agent.list_threads(status="interrupted", limit=5) == []
    assert len(list(agent.iter_threads(status="completed"))) == 1000


@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)
def test_a_closed_store_refuses_with_a_storage_error_on_any_loop(stores: StoreFactory) -> None:
    """A checkpointer used after ``close()`` raises ``StorageError`` saying it is closed, from
    the async API on any event loop (a Postgres store's shut-down thread pool raised
    ``RuntimeError``, which a worker's last give-back of a run did not expect)."""
    store = stores()
    asyncio.run(store.list_threads(limit=1))
    asyncio.run(store.close())
    for call in (lambda: store.load("t1"), lambda: store.list_threads(limit=1)):
        with pytest.raises(StorageError, match="is closed"):
            asyncio.run(call())
    asyncio.run(store.close())  # closing twice is harmless


# ---------------------------------------------------------------------- Postgres stopped


@pytest.mark.postgres
def test_a_stopped_postgres_is_reported_as_unreachable(tmp_path: Path) -> None:
    from conftest import require_postgres
    from interlock import PostgresCheckpointer
    from private_pg import PrivatePostgres

    require_postgres()  # psycopg installed; the suite's Postgres tests run here
    pg = PrivatePostgres()
    try:
        ran = Counter()
        agent = make_agent(PostgresCheckpointer(pg.dsn, timeout=3, connect_timeout=2), ran)
        assert agent.invoke("charge it", thread_id="t").interrupted
        pg.stop()
        with pytest.raises(StorageError, match="unreachable") as err:
            agent.resume("t", [{"type": "approve"}])
        assert "max_size" not in str(err.value)
        assert ran.calls == 0
        with pytest.raises(StorageError, match="unreachable") as err:
            agent.get_thread("t")
        # a read says it was one (it said "Nothing of this change was stored")
        assert "This was a read: nothing was changed." in str(err.value)
        assert "change was stored" not in str(err.value)
        pg.start()
        deadline = time.monotonic() + 30
        while True:  # reads are harmless to repeat while the pool reconnects
            try:
                assert agent.get_thread("t").status == "interrupted"
                break
            except StorageError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        assert agent.resume("t", [{"type": "approve"}]).status == "completed"
        assert ran.calls == 1
        agent.close()
    finally:
        pg.remove()


def test_a_result_that_cannot_be_stored_is_kept_through_failed_recoveries(
        tmp_path: Path) -> None:
    """Another connection holds SQLite's write lock from the moment the tool runs: the
    result cannot be stored, nor can three recoveries while the lock is held. The result is
    kept in this process until a recovery can store it; nobody is asked "outcome unknown" and
    the tool runs once (before: the first failed recovery threw it away)."""
    path = tmp_path / "t.db"
    ran = Counter()
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)

    @tool
    def charge(amount: int) -> str:
        """Charge an amount."""
        ran.calls += 1
        holder.execute("BEGIN IMMEDIATE")  # another writer takes the lock meanwhile
        return f"charged {amount}"

    def reply(messages: Any) -> Any:
        if messages[-1].role == "tool":
            return f"done: {messages[-1].content}"
        return {"name": "charge", "args": {"amount": 5}, "id": "c1"}

    agent = Agent(model=ScriptedModel(reply), tools=[charge],
                  middleware=[HumanInTheLoop({"charge": True})],
                  checkpointer=SqliteCheckpointer(path, busy_timeout=0.1))
    assert agent.invoke("charge it", thread_id="t").interrupted
    try:
        with pytest.raises(StorageError, match="locked"):
            agent.resume("t", [{"type": "approve"}])
        for _ in range(3):
            assert agent.recover_stale() == []  # each attempt fails while the lock is held
            with pytest.raises(StorageError, match="locked"):
                agent.recover("t")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    [result] = agent.recover_stale()
    assert result.status == "completed"
    assert result.output == "done: charged 5"
    assert ran.calls == 1
    assert outcome_unknown_rows(agent, "t") == 0
