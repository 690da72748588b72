"""Shared fixtures: storage backends (memory, SQLite, Postgres) and entry points
(sync, async, streaming), so end-to-end tests run against every combination."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from interlock import Agent, Checkpointer, Command, RunCompleted, RunResult
from interlock.authz import read_keys

# The audit key of every test process (and the processes they start): a fresh file, never the
# user's own ~/.config/interlock/audit.key.
# Removed when the test process that made it exits (the processes it started have ended).
if "INTERLOCK_AUDIT_KEY_FILE" not in os.environ:
    _audit_dir = tempfile.mkdtemp(prefix="interlock-audit-")
    os.environ["INTERLOCK_AUDIT_KEY_FILE"] = os.path.join(_audit_dir, "audit.key")
    atexit.register(shutil.rmtree, _audit_dir, ignore_errors=True)

PG_DSN = os.environ.get("INTERLOCK_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
BACKENDS = ["memory", "sqlite", "postgres"]


def unavailable(what: str, problem: str) -> NoReturn:
    """Something the tests need and CI has is missing here: a failure under ``CI=true`` (so
    that a run cannot pass by skipping it), a skip that says how to enable it elsewhere."""
    if IN_CI:
        pytest.fail(f"{what} must run in CI (CI=true), but {problem}")
    pytest.skip(f"{what} skipped: {problem}")


def postgres_available() -> str | None:
    """Return None when Postgres answers, else the reason it does not. ``psycopg`` is a
    declared dependency: a broken install is an import error, never a skip."""
    import psycopg

    try:
        with psycopg.connect(PG_DSN, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        return f"cannot connect to {PG_DSN}: {exc}"
    return None


_POSTGRES_USED: list[bool] = [False]
"""Set by :func:`require_postgres` while a test runs: ``_postgres_marker_is_true`` checks that
such a test carries the ``postgres`` marker."""


def require_postgres() -> str:
    """The DSN, or fail (in CI) / skip (elsewhere) when Postgres is not reachable."""
    _POSTGRES_USED[0] = True
    problem = postgres_available()
    if problem is not None:
        unavailable("Postgres tests", f"{problem}. Start PostgreSQL or set "
                                      f"INTERLOCK_TEST_PG_DSN to enable them")
    return PG_DSN


class StoreFactory:
    """Makes checkpointers that all point at the same storage, as separate processes would."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        self.tmp_path = tmp_path
        self.sqlite_path = tmp_path / "interlock.db"
        self.pg_schema = f"t_{uuid.uuid4().hex[:12]}"
        self._memory: Any = None
        self.made: list[Checkpointer] = []

    def __call__(self) -> Checkpointer:
        store: Checkpointer
        if self.kind == "memory":
            from interlock import MemoryCheckpointer

            if self._memory is None:
                self._memory = MemoryCheckpointer()
            store = self._memory
        elif self.kind == "sqlite":
            from interlock import SqliteCheckpointer

            store = SqliteCheckpointer(self.sqlite_path, read_keys=read_keys)
        else:
            from interlock import PostgresCheckpointer

            store = PostgresCheckpointer(PG_DSN, schema=self.pg_schema, read_keys=read_keys)
        self.made.append(store)
        return store

    @property
    def durable(self) -> bool:
        return self.kind != "memory"

    def url(self) -> str:
        """A ``--db`` URL for CLI / server processes."""
        if self.kind == "sqlite":
            return f"sqlite:///{self.sqlite_path}"
        if self.kind == "postgres":
            return f"{PG_DSN}?options=-csearch_path%3D{self.pg_schema}"
        raise ValueError("memory storage has no URL")

    def cleanup(self) -> None:
        for store in self.made:
            with contextlib.suppress(Exception):
                asyncio.run(store.close())
        if self.kind == "postgres":
            import psycopg

            with psycopg.connect(PG_DSN, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{self.pg_schema}" CASCADE')


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres":
        require_postgres()
    return str(request.param)


@pytest.fixture
def stores(backend: str, tmp_path: Path) -> Iterator[StoreFactory]:
    factory = StoreFactory(backend, tmp_path)
    yield factory
    factory.cleanup()


@pytest.fixture(params=["sqlite", "postgres"])
def durable_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """A database someone can also open directly, or from another process: SQLite and
    Postgres."""
    if request.param == "postgres":
        require_postgres()
    factory = StoreFactory(str(request.param), tmp_path)
    yield factory
    factory.cleanup()


@pytest.fixture
def sqlite_stores(tmp_path: Path) -> Iterator[StoreFactory]:
    factory = StoreFactory("sqlite", tmp_path)
    yield factory
    factory.cleanup()


class EntryPoint:
    """Runs the agent through one of its entry points: sync, async or streaming."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.events: list[Any] = []

    def _stream(self, agent: Agent, input: Any, thread_id: str) -> RunResult:
        result: RunResult | None = None
        for event in agent.stream(input, thread_id=thread_id):
            self.events.append(event)
            if isinstance(event, RunCompleted):
                result = event.result
        assert result is not None, "stream ended without RunCompleted"
        return result

    def invoke(self, agent: Agent, input: Any, *, thread_id: str) -> RunResult:
        if self.kind == "sync":
            return agent.invoke(input, thread_id=thread_id)
        if self.kind == "async":
            return asyncio.run(agent.ainvoke(input, thread_id=thread_id))
        return self._stream(agent, input, thread_id)

    def resume(self, agent: Agent, thread_id: str, decisions: Any = None, **kw: Any) -> RunResult:
        if self.kind == "sync":
            return agent.resume(thread_id, decisions, **kw)
        if self.kind == "async":
            return asyncio.run(agent.aresume(thread_id, decisions, **kw))
        if "value" in kw:
            return self._stream(agent, Command(resume=kw["value"]), thread_id)
        payload = {"decisions": decisions}
        if kw.get("interrupt_id"):
            payload = {kw["interrupt_id"]: payload}
        return self._stream(agent, Command(resume=payload), thread_id)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's headless chromium through Playwright, one per test module (see
    ``server/live.py``); a module may define its own."""
    from server.live import chromium

    with chromium() as b:
        yield b


@pytest.fixture(params=["sync", "async", "stream"])
def entry(request: pytest.FixtureRequest) -> EntryPoint:
    return EntryPoint(str(request.param))


Factory = Callable[[], Checkpointer]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``first`` (minutes each: installs in fresh environments, the benchmark's
    smoke run) go first, in their order; the rest keep theirs. With two test processes they
    then run alongside the short tests instead of after them, and each module's tests stay
    together (module-scoped fixtures are set up once)."""
    items.sort(key=lambda item: item.get_closest_marker("first") is None)
    # every test that runs on Postgres carries the ``postgres`` marker (``-m postgres`` /
    # ``-m "not postgres"`` select exactly them): those given the backend "postgres" through a
    # parameter (``backend``, ``store_factory``, a fixture's params) are marked here; a test
    # that asks for Postgres in its own code is marked where it is written, and
    # ``_postgres_marker_is_true`` fails any that is not
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "postgres" in callspec.params.values():
            item.add_marker(pytest.mark.postgres)


@pytest.fixture(autouse=True)
def _postgres_marker_is_true(request: pytest.FixtureRequest) -> Iterator[None]:
    _POSTGRES_USED[0] = False
    yield
    if _POSTGRES_USED[0] and request.node.get_closest_marker("postgres") is None:
        pytest.fail(f"{request.node.nodeid} runs on Postgres (require_postgres) but has no "
                    f"postgres marker: add @pytest.mark.postgres")
