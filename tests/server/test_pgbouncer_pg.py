"""The operator's deployment through PgBouncer (Debian's package, a process of the test's own in
front of a private Postgres): an API-only server and two workers, connected as a runtime role
that has only the grants docs/deploying.md lists (the tables made beforehand by `interlock
migrate` as the owner role), 50 runs paused and decided over HTTP. In session mode and in
transaction mode every approved call runs once and no thread is left behind; live updates
work, or — transaction mode without a direct listening URL — /api/health and the log say they
cannot and which polling replaces them."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from conftest import require_postgres
from interlock import PostgresCheckpointer, StorageError
from interlock.cli import main as cli

from .conftest import ALICE, TOKENS, bearer
from .live import ServeProcess, stop_all
from .test_multiprocess_pg import executions
from .test_workers_pg import WorkerProcess, pause_and_approve, wait_for

pytestmark = pytest.mark.postgres

# what docs/deploying.md tells to run, as a superuser, for an owner and a runtime role
ROLES_SQL = """
CREATE ROLE interlock_owner LOGIN;
CREATE ROLE interlock_app LOGIN;
CREATE SCHEMA interlock AUTHORIZATION interlock_owner;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
"""
GRANTS_SQL = """
GRANT USAGE ON SCHEMA interlock TO interlock_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA interlock TO interlock_app;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA interlock TO interlock_app;
ALTER DEFAULT PRIVILEGES FOR ROLE interlock_owner IN SCHEMA interlock
  GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO interlock_app;
ALTER DEFAULT PRIVILEGES FOR ROLE interlock_owner IN SCHEMA interlock
  GRANT USAGE, SELECT ON SEQUENCES TO interlock_app;
"""


@pytest.fixture
def database() -> Iterator[Any]:
    """A private Postgres with the tables migrated by the owner role and the runtime role
    granted what the docs list."""
    import psycopg

    from private_pg import PrivatePostgres

    require_postgres()
    pg = PrivatePostgres()
    try:
        with psycopg.connect(pg.dsn, autocommit=True) as conn:
            conn.execute(ROLES_SQL)
        owner = f"postgresql://interlock_owner@127.0.0.1:{pg.port}/postgres?schema=interlock"
        migrated = CliRunner().invoke(cli, ["migrate", "--db", owner])
        assert migrated.exit_code == 0, migrated.output
        assert "Migrated schema 'interlock'" in migrated.output
        with psycopg.connect(pg.dsn, autocommit=True) as conn:
            conn.execute(GRANTS_SQL)
            # the runtime role may change rows, nothing else
            assert conn.execute("SELECT has_schema_privilege('interlock_app', 'interlock', "
                                "'CREATE')").fetchone() == (False,)
        yield pg
    finally:
        pg.remove()


def scenario(tmp_path: Path, url: str, env: dict[str, str], n: int = 50) -> dict[str, Any]:
    """API-only server + two workers on ``url``; ``n`` runs started and decided over HTTP.
    Returns the server's /api/health and the processes' log lines."""
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    log = tmp_path / "executions.jsonl"
    log.touch()
    release = tmp_path / "release"
    started: list[ServeProcess] = []
    try:
        server = ServeProcess("api", url, tokens, log, ["--api-only"], env=env)
        started.append(server)
        for name in ("worker 1", "worker 2"):
            started.append(WorkerProcess(name, url, log, release, env=env))
        with httpx.Client(timeout=120) as c:
            pause_and_approve(c, server.url, "b", n)

            def statuses() -> dict[str, int]:
                listed = c.get(f"{server.url}/api/threads", params={"limit": 500},
                               headers=bearer(ALICE)).json()["threads"]
                counts: dict[str, int] = {}
                for t in listed:
                    counts[t["status"]] = counts.get(t["status"], 0) + 1
                return counts

            wait_for(lambda: statuses().get("completed") == n, 180, "every run to complete")
            assert statuses() == {"completed": n}  # 0 stuck (running, interrupted) threads
            health = c.get(f"{server.url}/api/health")
            assert health.status_code == 200, health.text
        runs = executions(log)
        for i in range(n):
            mine = [e for e in runs if e["args"] == {"query": f"UPDATE t SET n = {i}"}]
            assert len(mine) == 1, mine
        return {"health": health.json(), "lines": [ln for p in started for ln in p.lines]}
    finally:
        codes = stop_all(started)
        for p in started:
            assert not any("Traceback" in line for line in p.lines), "".join(p.lines)
        assert all(code == 0 for _, code in codes), codes


def queue_is_empty(url: str) -> bool:
    store = PostgresCheckpointer(url)
    try:
        return asyncio.run(store.queue_list()) == []
    finally:
        asyncio.run(store.close())


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["session", "transaction", "transaction+direct-listen"])
def test_fifty_runs_through_pgbouncer_run_each_approved_call_once(
        mode: str, database: Any, tmp_path: Path) -> None:
    from private_pg import PrivatePgBouncer

    pool_mode = mode.split("+")[0]
    # session mode: a client holds a server connection for its life, so the pooler's pool
    # must cover 3 processes x (max_size 4 + 2): 18 <= 20
    bouncer = PrivatePgBouncer(database, pool_mode, pool_size=20,
                               users=("interlock_app", "postgres"))
    try:
        url = bouncer.url("interlock_app") + "?schema=interlock&max_size=4&migrate=false"
        if pool_mode == "transaction":
            url += "&prepare_threshold=none"
        env = {}
        if mode.endswith("direct-listen"):
            env["INTERLOCK_LISTEN_DB"] = (f"postgresql://interlock_app@127.0.0.1:"
                                          f"{database.port}/postgres")
        seen = scenario(tmp_path, url, env)
        health, lines = seen["health"], seen["lines"]
        assert health["writes"] is True
        # no LISTEN of the schema's channels was left on a pooled server connection: PgBouncer
        # warns for each signal that reaches one between clients (at most the self-test's own,
        # once per process, whose channel nobody else uses)
        stray = bouncer.log_lines("got packet 'A' from server when not linked")
        assert len(stray) <= 3, stray
        if mode == "transaction":  # LISTEN cannot work: said so, and what replaces it
            assert "transaction mode" in health["live_updates_error"]
            assert health["live_updates"] == "polling every 0.1 s"
            assert any("live updates from Postgres cannot work" in ln for ln in lines)
            assert any("polling every" in ln for ln in lines)
        else:
            assert health["live_updates_error"] is None
            assert health["live_updates"].startswith("change signals")
            assert not any("cannot work" in ln for ln in lines)
        assert queue_is_empty(url)
    finally:
        bouncer.remove()


def test_a_full_pooler_is_reported_with_its_cause(database: Any,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """PgBouncer in session mode with a pool of one: a second process gets no server
    connection; it says so while it waits, and why once the pooler's query_wait_timeout ends
    the wait, instead of blaming privileges."""
    from private_pg import PrivatePgBouncer

    caplog.set_level(logging.WARNING, logger="interlock.storage")
    bouncer = PrivatePgBouncer(database, "session", pool_size=1, query_wait_timeout=4,
                               users=("interlock_app",))
    first = PostgresCheckpointer(bouncer.url("interlock_app") + "?schema=interlock",
                                 max_size=1)
    second = PostgresCheckpointer(bouncer.url("interlock_app") + "?schema=interlock",
                                  connect_timeout=1)
    try:
        assert asyncio.run(first.list_threads(limit=1)) == []  # holds the only connection
        with pytest.raises(StorageError) as err:
            asyncio.run(second.list_threads(limit=1))
        text = str(err.value)
        assert "query_wait_timeout" in text and "default_pool_size" in text, text
        assert "CREATE" not in text
        assert any("has not answered for 1 s" in r.getMessage() for r in caplog.records)
    finally:
        asyncio.run(first.close())
        asyncio.run(second.close())
        bouncer.remove()


def test_options_refused_by_pgbouncer_name_the_fix(database: Any) -> None:
    from private_pg import PrivatePgBouncer

    bouncer = PrivatePgBouncer(database, "session", users=("interlock_app",))
    store = PostgresCheckpointer(bouncer.url("interlock_app")
                                 + "?options=-csearch_path%3Dinterlock")
    try:
        with pytest.raises(StorageError) as err:
            asyncio.run(store.list_threads(limit=1))
        text = str(err.value)
        assert "unsupported startup parameter: options" in text
        assert "schema=NAME" in text and "ALTER ROLE" in text
    finally:
        asyncio.run(store.close())
        bouncer.remove()
