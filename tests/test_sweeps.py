"""The recovery sweep (``recover_stale``: ``interlock serve``, ``interlock worker``,
``interlock recover --agent``) continues runs that failed part-way and recorded the failure,
not only threads whose process is gone (issue 31, finding 4)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import PG_DSN, StoreFactory, require_postgres
from interlock import (
    Agent,
    CallState,
    Checkpointer,
    HumanInTheLoop,
    ModelError,
    ScriptedModel,
    SqliteCheckpointer,
    StorageError,
    tool,
)
from interlock.storage.base import Commit


class FailsOnce:
    """A SQLite store whose first commit that stores a ``running`` call fails (as a full disk
    would for that one write); later commits work."""

    durable = True

    def __init__(self, inner: Checkpointer) -> None:
        self.inner = inner
        self.armed = False
        self.refused = 0

    async def commit(self, change: Commit, *, expected_version: int | None) -> None:
        if self.armed and any(e.state == CallState.RUNNING for e in change.journal):
            self.armed = False
            self.refused += 1
            raise StorageError("injected: this one write failed")
        await self.inner.commit(change, expected_version=expected_version)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def make(store: Any, ran: list[int], model_fails: list[int]) -> Agent:
    @tool
    def charge(amount: int) -> str:
        """Charge an amount."""
        ran.append(amount)
        return f"charged {amount}"

    def reply(messages: Any) -> Any:
        if messages[-1].role == "tool":
            if model_fails:
                model_fails.pop()
                raise ModelError("the model provider is down", provider="scripted")
            return f"done: {messages[-1].content}"
        return {"name": "charge", "args": {"amount": 5}, "id": "c1"}

    return Agent(model=ScriptedModel(reply), tools=[charge],
                 middleware=[HumanInTheLoop({"charge": True})], checkpointer=store)


def test_an_approved_call_left_by_a_failed_run_is_run_by_the_sweep(tmp_path: Path) -> None:
    ran: list[int] = []
    store = FailsOnce(SqliteCheckpointer(tmp_path / "t.db"))
    agent = make(store, ran, [])
    assert agent.invoke("charge", thread_id="t").interrupted
    store.armed = True
    with pytest.raises(StorageError, match="injected"):
        agent.resume("t", [{"type": "approve"}])
    state = agent.get_thread("t")
    assert state.status == "failed" and ran == []
    assert [e.state for e in agent.journal("t")] == [CallState.APPROVED]
    [result] = agent.recover_stale()
    assert result.status == "completed" and result.output == "done: charged 5"
    assert ran == [5]
    assert agent.recover_stale() == []


def test_tool_results_the_model_never_saw_are_handed_on_by_the_sweep(tmp_path: Path) -> None:
    ran: list[int] = []
    agent = make(SqliteCheckpointer(tmp_path / "t.db"), ran, [1])
    assert agent.invoke("charge", thread_id="t").interrupted
    with pytest.raises(ModelError):
        agent.resume("t", [{"type": "approve"}])
    state = agent.get_thread("t")
    assert state.status == "failed" and ran == [5]
    assert state.messages[-1].role == "tool"
    [result] = agent.recover_stale()
    assert result.status == "completed" and result.output == "done: charged 5"
    assert ran == [5]


def test_a_failed_run_without_work_left_is_not_swept(tmp_path: Path) -> None:
    """A model that failed on the first message: the sender retries (nothing was approved)."""
    calls: list[int] = []

    def reply(messages: Any) -> Any:
        calls.append(1)
        raise ModelError("the model provider is down", provider="scripted")

    agent = Agent(model=ScriptedModel(reply), checkpointer=SqliteCheckpointer(tmp_path / "t.db"))
    with pytest.raises(ModelError):
        agent.invoke("hello", thread_id="t")
    assert agent.get_thread("t").status == "failed"
    assert agent.recover_stale() == []
    assert calls == [1]


# -- the sweep reads what it may have to do, through an index of those threads alone ---------

IDLE = 600
"""Threads of each kind the sweep must not read: completed, and failed with no work left."""


class Reads:
    """A store that counts the thread rows handed to the sweep and the threads it loads."""

    durable = True

    def __init__(self, inner: Checkpointer) -> None:
        self.inner = inner
        self.rows = 0
        self.loaded: list[str] = []

    async def list_threads(self, **kw: Any) -> Any:
        rows = await self.inner.list_threads(**kw)
        self.rows += len(rows)
        return rows

    async def sweep_candidates(self, **kw: Any) -> Any:
        rows = await self.inner.sweep_candidates(**kw)  # type: ignore[attr-defined]
        self.rows += len(rows)
        return rows

    async def load(self, thread_id: str, **kw: Any) -> Any:
        self.loaded.append(thread_id)
        return await self.inner.load(thread_id, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """Stores of one SQLite file or one Postgres schema."""
    if request.param == "postgres":
        require_postgres()
    factory = StoreFactory(str(request.param), tmp_path)
    try:
        yield factory
    finally:
        factory.cleanup()


def _fill_idle(store: Checkpointer) -> None:
    """``IDLE`` completed threads and ``IDLE`` failed ones whose model failed on the first
    message (nothing approved: left to the sender), stored as the engine stores them."""
    import asyncio
    from datetime import UTC, datetime

    from interlock import AssistantMessage, UserMessage
    from interlock.storage import ThreadRecord

    now = datetime.now(UTC)

    async def fill() -> None:
        for i in range(IDLE):
            for status, tail in (("completed", AssistantMessage(content="done")),
                                 ("failed", None)):
                msgs = [UserMessage(content="hello"), *([tail] if tail else [])]
                t = ThreadRecord(thread_id=f"{status}-{i:04d}", status=status, version=1,
                                 created_at=now, updated_at=now, message_count=len(msgs))
                await store.commit(Commit(thread=t, messages=msgs), expected_version=None)

    asyncio.run(fill())


def _two_with_work_left(store: Any, ran: list[int]) -> None:
    """``w1``: an approved call left by a run whose write failed; ``w2``: a tool result the
    model failed on."""
    agent = make(store, ran, [])
    assert agent.invoke("charge", thread_id="w1").interrupted
    store.armed = True
    with pytest.raises(StorageError, match="injected"):
        agent.resume("w1", [{"type": "approve"}])
    agent = make(store, ran, [1])
    assert agent.invoke("charge", thread_id="w2").interrupted
    with pytest.raises(ModelError):
        agent.resume("w2", [{"type": "approve"}])
    assert [agent.get_thread(t).status for t in ("w1", "w2")] == ["failed", "failed"]


def test_the_sweep_reads_only_the_threads_with_work_left(stores: StoreFactory) -> None:
    """Among 1,200 threads that are done (completed, or failed with nothing approved), the
    sweep reads the two that have work left and nothing else, and both continue."""
    inner = stores()
    _fill_idle(inner)
    ran: list[int] = []
    _two_with_work_left(FailsOnce(inner), ran)
    assert ran == [5]  # w2's call ran; w1's was approved and never started
    counted = Reads(inner)
    results = make(counted, ran, []).recover_stale()
    assert sorted(r.thread_id for r in results) == ["w1", "w2"]
    assert all(r.status == "completed" for r in results)
    assert ran == [5, 5]
    assert counted.rows == 2, counted.rows
    assert set(counted.loaded) == {"w1", "w2"}, sorted(set(counted.loaded))[:10]
    counted.rows = 0
    assert make(counted, ran, []).recover_stale() == []
    assert counted.rows == 0


def test_the_sweep_query_uses_the_partial_index(stores: StoreFactory) -> None:
    """EXPLAIN of the sweep's page: the index of the marked rows, not the table or the status
    index (Postgres: with statistics that say the table holds 1,200 rows)."""
    import asyncio

    store = stores()
    _fill_idle(store)
    ran: list[int] = []
    _two_with_work_left(FailsOnce(store), ran)
    if stores.kind == "sqlite":
        import sqlite3

        from interlock.storage.sqlite import SWEEP_PAGE

        with sqlite3.connect(stores.sqlite_path) as conn:
            plan = " ".join(str(r) for r in conn.execute(
                f"EXPLAIN QUERY PLAN {SWEEP_PAGE}", ("", 200)))
    else:
        import psycopg

        from conftest import PG_DSN

        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'ANALYZE "{stores.pg_schema}".interlock_threads')
            plan = " ".join(str(r[0]) for r in conn.execute(
                f'EXPLAIN SELECT data FROM "{stores.pg_schema}".interlock_threads '
                "WHERE sweep AND thread_id > '' ORDER BY thread_id LIMIT 200"))
    assert "interlock_threads_sweep" in plan, plan
    marked = asyncio.run(store.sweep_candidates())  # type: ignore[attr-defined]
    assert [t.thread_id for t in marked] == ["w1", "w2"]


def test_the_mark_follows_the_thread_and_is_backfilled_on_upgrade(
        stores: StoreFactory) -> None:
    """Marked while running or failed with work left, unmarked once done; a store written
    before the mark existed marks its threads when it is upgraded."""
    import asyncio

    def marked(store: Any) -> list[str]:
        return [t.thread_id for t in asyncio.run(store.sweep_candidates())]

    store = stores()
    ran: list[int] = []
    _two_with_work_left(FailsOnce(store), ran)
    agent = make(store, ran, [])
    assert agent.invoke("charge", thread_id="w3").interrupted  # waits for a person
    assert marked(store) == ["w1", "w2"]
    asyncio.run(store.close())
    # as written by the version before the mark: no column, no index
    if stores.kind == "sqlite":
        import sqlite3

        with sqlite3.connect(stores.sqlite_path) as conn:
            conn.execute("DROP INDEX interlock_threads_sweep")
            conn.execute("ALTER TABLE interlock_threads DROP COLUMN sweep")
            conn.execute("UPDATE interlock_meta SET value = '7' "
                         "WHERE key = 'schema_version'")
    else:
        import psycopg

        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            s = stores.pg_schema
            conn.execute(f'ALTER TABLE "{s}".interlock_threads DROP COLUMN sweep')
            # and what later versions added (their migrations run again)
            conn.execute(f'ALTER TABLE "{s}".interlock_threads DROP COLUMN metadata')
            conn.execute(f"UPDATE \"{s}\".interlock_meta SET value = '8' "
                         "WHERE key = 'schema_version'")
    store = stores()
    assert marked(store) == ["w1", "w2"]
    results = make(store, ran, []).recover_stale()
    assert sorted(r.thread_id for r in results) == ["w1", "w2"]
    assert marked(store) == []
