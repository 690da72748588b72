"""Postgres as teams run it: the URL's libpq parameters are used (TLS, application_name,
options), passwords stay out of every message, a standby or read-only server is refused at
start and reported by ``/api/health``, a failover pair listed in the URL is followed, and
migrations neither time out on the session's statement_timeout nor give false warnings."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import PG_DSN, require_postgres
from interlock import Agent, PostgresCheckpointer, ScriptedModel, StorageError
from interlock.cli import main as cli
from interlock.storage import from_url

pytestmark = pytest.mark.postgres


@pytest.fixture
def schema() -> Iterator[str]:
    require_postgres()
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield name
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_application_name_and_options_of_the_url_reach_the_server(schema: str) -> None:
    app = f"interlock-test-{uuid.uuid4().hex[:8]}"
    store = from_url(f"{PG_DSN}?application_name={app}&schema={schema}"
                     f"&options=-c%20statement_timeout%3D4321")
    assert isinstance(store, PostgresCheckpointer) and store.schema == schema
    try:
        run(store.list_threads(limit=1))
        import psycopg

        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            seen = conn.execute("SELECT count(*) FROM pg_stat_activity "
                                "WHERE application_name = %s", [app]).fetchone()
        assert seen is not None and seen[0] >= 1
        # the options parameter reached the session too
        with store._conn("test") as conn:
            row = conn.execute("SHOW statement_timeout").fetchone()
        assert row is not None and row[0] == "4321ms"
        tables = run(store.count_threads())
        assert tables == 0
    finally:
        run(store.close())


def test_sslmode_require_against_a_server_without_tls_fails_with_the_reason(
        schema: str) -> None:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        row = conn.execute("SHOW ssl").fetchone()
    if row is not None and row[0] == "on":
        pytest.skip("the test server has TLS on")
    store = from_url(f"{PG_DSN}?sslmode=require&schema={schema}")
    with pytest.raises(StorageError) as err:
        run(store.list_threads(limit=1))
    assert "Cannot connect" in str(err.value)
    assert "SSL" in str(err.value)
    assert "sslmode" in str(err.value)


def test_passwords_never_appear_in_messages_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    secret = "Sup3r-s3cret-pw"
    url = f"postgresql://someone:{secret}@127.0.0.1:1/db?sslmode=disable&connect_timeout=1"
    store = from_url(url)
    assert secret not in repr(store)
    with pytest.raises(StorageError) as err:
        run(store.list_threads(limit=1))
    assert "someone@127.0.0.1:1/db" in str(err.value)
    assert secret not in str(err.value)
    result = CliRunner().invoke(cli, ["threads", "--db", url])
    assert result.exit_code != 0 and secret not in result.output
    result = CliRunner().invoke(cli, ["threads", "--db", f"mysql://u:{secret}@h/db"])
    assert result.exit_code == 2 and "u:***@h" in result.output
    assert secret not in result.output
    result = CliRunner().invoke(cli, ["migrate", "--db", url])
    assert result.exit_code == 1 and secret not in result.output
    assert all(secret not in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("password", ["AppPW/s3cr3t", "App@s3cr3t", "a@b/c:Sup3rPW"])
def test_a_password_with_unencoded_separators_stays_out_of_messages(
        password: str, caplog: pytest.LogCaptureFixture) -> None:
    """libpq misreads such a URL (part of the password taken for the host): neither our own
    description of the server nor libpq's message shows any piece of it."""
    caplog.set_level(logging.DEBUG)
    url = f"postgresql://someone:{password}@127.0.0.1:1/db?connect_timeout=1"
    pieces = [p for p in (password, *password.replace("@", "/").replace(":", "/").split("/"))
              if len(p) >= 3]
    store = from_url(url)
    with pytest.raises(StorageError) as err:
        run(store.list_threads(limit=1))
    said = [repr(store), str(err.value)]
    for args in (["threads", "--db", url], ["migrate", "--db", url]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code != 0
        said.append(result.output)
    said += [r.getMessage() for r in caplog.records]
    assert "someone@127.0.0.1:1/db" in said[0]
    for text in said:
        for piece in pieces:
            assert piece not in text, text


def test_a_libpq_keyword_string_is_postgres_and_its_password_is_hidden(
        tmp_path: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``host=... password=...`` is libpq's keyword form, as PostgresCheckpointer takes it:
    --db and INTERLOCK_DB take it too (not a SQLite file of that name), and no message, log
    line or file name shows its password."""
    caplog.set_level(logging.DEBUG)
    monkeypatch.chdir(tmp_path)
    secret = "S3cretPW-kw"
    dsn = f"host=127.0.0.1 port=1 dbname=db user=someone password={secret} connect_timeout=1"
    store = from_url(dsn)
    assert isinstance(store, PostgresCheckpointer)
    assert repr(store).startswith("PostgresCheckpointer('someone@127.0.0.1:1/db'")
    said = [repr(store)]
    for args in (["threads", "--db", dsn], ["migrate", "--db", dsn], ["show", "t", "--db", dsn]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code != 0, result.output
        assert "SQLite" not in result.output and "database file" not in result.output
        said.append(result.output)
    said += [r.getMessage() for r in caplog.records]
    assert all(secret not in text for text in said), said
    assert list(tmp_path.iterdir()) == []  # no SQLite file named after the string
    with pytest.raises(StorageError) as err:
        run(store.list_threads(limit=1))
    assert secret not in str(err.value) and "someone@127.0.0.1:1/db" in str(err.value)


def test_calls_that_no_database_thread_takes_up_in_time_are_refused(schema: str) -> None:
    """Every database thread held by statements waiting on a lock: a further call (a health
    check too) is refused after the pool's timeout, with nothing of it run, instead of
    waiting for the lock; once the lock goes, the store works again."""
    import psycopg

    store = from_url(f"{PG_DSN}?schema={schema}&max_size=2&pool_timeout=2")
    assert isinstance(store, PostgresCheckpointer)
    run(store.list_threads(limit=1))  # the tables exist
    holder = psycopg.connect(PG_DSN)
    holder.execute(f'LOCK TABLE "{schema}".interlock_threads IN ACCESS EXCLUSIVE MODE')

    async def main() -> tuple[list[Any], Any, float]:
        blocked = [asyncio.create_task(store.list_threads(limit=1)) for _ in range(2)]
        await asyncio.sleep(0.5)  # both threads wait on the lock
        start = time.monotonic()
        with pytest.raises(StorageError, match="No free Postgres connection within 2s"):
            await store.list_threads(limit=1)
        health = await store.health()
        took = time.monotonic() - start
        holder.rollback()  # the lock goes: the two waiting calls finish
        return await asyncio.gather(*blocked), health, took

    try:
        done, health, took = run(main())
    finally:
        holder.close()
    assert took < 10, took
    assert health.writes is False and "every database thread" in (health.reason or "")
    assert done == [[], []]
    assert run(store.list_threads(limit=1)) == []
    run(store.close())


def test_bad_interlock_parameters_in_the_url_are_refused() -> None:
    from interlock import ConfigurationError

    with pytest.raises(ConfigurationError, match="prepare_threshold='sometimes'"):
        from_url("postgresql://u@h/db?prepare_threshold=sometimes")
    with pytest.raises(ConfigurationError, match="max_size=-2 in the database URL: give a number > 0"):
        from_url("postgresql://u@h/db?max_size=-2")
    store = from_url("postgresql://u@h/db?prepare_threshold=none&max_size=3&pool_timeout=2.5")
    assert isinstance(store, PostgresCheckpointer)
    assert (store.prepare_threshold, store.max_size, store.timeout) == (None, 3, 2.5)
    assert store.dsn == "postgresql://u@h/db"


# -- a migration that waits for another one ---------------------------------------------------


def test_a_process_waiting_for_another_migration_outlasts_its_statement_timeout(
        schema: str) -> None:
    """The migration (and the wait for another process's) is exempt from the session's
    statement_timeout: before, the waiting process failed with a "needs CREATE" hint."""
    import psycopg

    holder = psycopg.connect(PG_DSN)
    holder.execute("SELECT pg_advisory_xact_lock(hashtext(%s))",
                   [f"interlock-migrate:{schema}"])
    store = PostgresCheckpointer(f"{PG_DSN}?options=-c%20statement_timeout%3D300",
                                 schema=schema)
    outcome: list[object] = []

    def start() -> None:
        try:
            outcome.append(run(store.count_threads()))
        except Exception as exc:
            outcome.append(exc)

    t = threading.Thread(target=start)
    t.start()
    try:
        # the other "migration" holds its lock well past the 300 ms statement timeout
        deadline = time.monotonic() + 60
        with psycopg.connect(PG_DSN, autocommit=True) as watch:
            while time.monotonic() < deadline:
                waiting = watch.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                    "AND NOT granted").fetchone()
                if waiting and waiting[0] >= 1:
                    break
                time.sleep(0.05)
        time.sleep(1.0)
        assert not outcome  # still waiting, not failed
    finally:
        holder.rollback()
        holder.close()
        t.join(60)
    try:
        assert outcome == [0], outcome
    finally:
        run(store.close())


def test_a_runtime_store_behind_the_schema_asks_for_interlock_migrate(schema: str) -> None:
    for store in (PostgresCheckpointer(PG_DSN, schema=schema, migrate=False),
                  from_url(f"{PG_DSN}?schema={schema}&migrate=false")):
        with pytest.raises(StorageError, match="are at version 0, this interlock needs"):
            run(store.list_threads(limit=1))
        run(store.close())
    result = CliRunner().invoke(cli, ["migrate", "--db", f"{PG_DSN}?schema={schema}"])
    assert result.exit_code == 0, result.output
    assert "from version 0 to" in result.output
    again = CliRunner().invoke(cli, ["migrate", "--db", f"{PG_DSN}?schema={schema}"])
    assert again.exit_code == 0 and "Nothing to do" in again.output
    store = PostgresCheckpointer(PG_DSN, schema=schema, migrate=False)
    try:
        assert run(store.list_threads(limit=1)) == []
    finally:
        run(store.close())


def test_the_listener_keeps_its_connection_under_an_idle_session_timeout(
        schema: str, caplog: pytest.LogCaptureFixture) -> None:
    """With idle_session_timeout set (here 1 s, in the URL's options) the listening connection
    used to be ended at every pause and warned every few seconds."""
    caplog.set_level(logging.WARNING, logger="interlock.storage")
    url = f"{PG_DSN}?options=-c%20idle_session_timeout%3D1000"
    listening = PostgresCheckpointer(url, schema=schema)
    other = PostgresCheckpointer(url, schema=schema)
    woken = threading.Event()
    try:
        run(listening.list_threads(limit=1))
        stop = listening.on_signal("changes", woken.set)
        time.sleep(3.5)  # three idle_session_timeouts
        woken.clear()
        agent = Agent(model=ScriptedModel(["hello"]), checkpointer=other)
        agent.invoke("hi", thread_id="t1")
        assert woken.wait(30)
        stop()
        assert not [r for r in caplog.records if "listening for changes" in r.getMessage()]
        health = run(listening.health())
        assert health.writes and health.live_updates is True
    finally:
        run(listening.close())
        run(other.close())


# -- private servers: three schemas migrating at once, a standby, a failover pair -------------


@pytest.fixture(scope="module")
def primary() -> Iterator[Any]:
    from private_pg import PrivatePostgres

    require_postgres()
    pg = PrivatePostgres()
    try:
        yield pg
    finally:
        pg.remove()


def test_three_schemas_migrating_one_database_at_once_give_no_pg_trgm_warning(
        primary: Any, caplog: pytest.LogCaptureFixture) -> None:
    """pg_trgm is one per database: three installations migrating at once raced to create it
    and one of them warned that it could not, although it existed."""
    import psycopg

    caplog.set_level(logging.WARNING, logger="interlock.storage")
    db = f"trgm_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(primary.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {db}")
    dsn = primary.dsn.rsplit("/", 1)[0] + f"/{db}"
    stores = [PostgresCheckpointer(dsn, schema=f"s{i}") for i in range(3)]
    barrier = threading.Barrier(3)
    errors: list[BaseException] = []

    def migrate(store: PostgresCheckpointer) -> None:
        barrier.wait()
        try:
            run(store.list_threads(limit=1))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=migrate, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for s in stores:
        run(s.close())
    assert errors == []
    assert not [r for r in caplog.records if "pg_trgm" in r.getMessage()]
    with psycopg.connect(dsn, autocommit=True) as conn:
        indexed = conn.execute("SELECT count(*) FROM pg_indexes "
                               "WHERE indexname = 'interlock_threads_trigrams'").fetchone()
    assert indexed == (3,)


@pytest.mark.slow
def test_a_standby_is_refused_at_start_and_a_failover_pair_follows_the_primary(
        tmp_path: Path) -> None:
    from private_pg import PrivatePostgres

    require_postgres()
    primary = PrivatePostgres()  # its own: this test stops it
    standby: PrivatePostgres | None = None
    try:
        check_standby_and_failover(primary, standby := PrivatePostgres(standby_of=primary))
    finally:
        if standby is not None:
            standby.remove()
        primary.remove()


def check_standby_and_failover(primary: Any, standby: Any) -> None:
    setup = PostgresCheckpointer(primary.dsn, schema="fo")
    agent = Agent(model=ScriptedModel(["before"]), checkpointer=setup)
    agent.invoke("hi", thread_id="before-failover")
    run(setup.close())
    # the standby alone: refused at first use, with the reason and the fix
    store = PostgresCheckpointer(f"{standby.dsn}?schema=fo")
    started = time.monotonic()
    with pytest.raises(StorageError) as err:
        run(store.list_threads(limit=1))
    assert time.monotonic() - started < 10
    assert "standby" in str(err.value) and "target_session_attrs=read-write" in str(err.value)
    # the commands refuse to start on it
    result = CliRunner().invoke(cli, ["worker", "server.server_agents:make_agent",
                                      "--db", f"{standby.dsn}?schema=fo"])
    assert result.exit_code == 1 and "standby" in result.output, result.output
    # health over HTTP: writes fail, 503
    from interlock.server import create_app

    async def health() -> httpx.Response:
        app = create_app(Agent(model=ScriptedModel(["x"]), checkpointer=store),
                         use_env_tokens=False)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            return await c.get("/api/health")

    r = run(health())
    assert r.status_code == 503, r.text
    body = r.json()
    assert body["ok"] is False and body["writes"] is False
    assert "standby" in body["write_error"]
    run(store.close())

    # both hosts, primary first or not: libpq picks the one that takes writes
    pair = (f"postgresql://postgres@127.0.0.1:{standby.port},127.0.0.1:{primary.port}"
            f"/postgres?target_session_attrs=read-write&schema=fo&connect_timeout=2")
    store = from_url(pair)
    follower = Agent(model=ScriptedModel(["after"] * 5), checkpointer=store)
    assert follower.get_thread("before-failover") is not None
    primary.stop()
    standby.promote()
    # the first call after the failover may find its pooled connection gone; then the
    # pool reconnects to the promoted standby
    outcome = None
    deadline = time.monotonic() + 60
    while outcome is None and time.monotonic() < deadline:
        try:
            outcome = follower.invoke("hi", thread_id="after-failover")
        except StorageError:
            time.sleep(0.2)
    assert outcome is not None and outcome.status == "completed"
    assert follower.get_thread("before-failover") is not None
    assert run(store.health()).writes is True
    run(store.close())


# -- the URL: libpq's parameters kept as written, interlock's taken out, no password shown ----

_word = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126,
                                       exclude_characters="&=#%/?@:[]"), min_size=1,
                max_size=12)


@settings(max_examples=200, deadline=None)
@given(password=_word, libpq=st.lists(st.tuples(
           st.sampled_from(["sslmode", "application_name", "target_session_attrs",
                            "sslrootcert", "connect_timeout", "options"]), _word),
           max_size=4, unique_by=lambda kv: kv[0]),
       schema=st.none() | st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True))
def test_the_url_keeps_libpq_parameters_takes_out_interlocks_and_hides_the_password(
        password: str, libpq: list[tuple[str, str]], schema: str | None) -> None:
    from urllib.parse import quote

    from interlock.storage.postgres_conn import redact, redact_url, split_dsn

    query = [f"{k}={quote(v, safe='')}" for k, v in libpq]
    if schema is not None:
        query.insert(len(query) // 2, f"schema={schema}")
    password = "PW-" + password  # a mark that nothing else in the URL holds
    url = (f"postgresql://app:{quote(password, safe='')}@db-a:5432,db-b:5433/agents"
           + ("?" + "&".join(query) if query else ""))
    parts = split_dsn(url)
    assert parts.schema == schema  # (no "=" in the words: options never names a search_path)
    kept = parts.libpq.split("?", 1)[1].split("&") if "?" in parts.libpq else []
    assert kept == [q for q in query if not q.startswith("schema=")]
    assert parts.libpq.startswith(f"postgresql://app:{quote(password, safe='')}@db-a:5432,"
                                  f"db-b:5433/agents")
    shown = redact(url), redact_url(url)
    assert all("PW-" not in s for s in shown)
    assert shown[0] == "app@db-a,db-b:5432,5433/agents"


def test_interlock_migrate_is_not_cut_short_by_a_tiny_statement_timeout(schema: str) -> None:
    """A statement timeout of 1 ms in the URL's options: the explicit migration step, its
    version check included, runs to its end, and a second run has nothing to do."""
    url = f"{PG_DSN}?schema={schema}&options=-c%20statement_timeout%3D1"
    first = CliRunner().invoke(cli, ["migrate", "--db", url])
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(cli, ["migrate", "--db", url])
    assert again.exit_code == 0 and "Nothing to do" in again.output, again.output


def test_a_prepared_statement_sent_on_another_server_connection_names_the_pooler() -> None:
    """Behind PgBouncer in transaction mode without prepare_threshold=none, a statement
    prepared on one server connection is sent on another: the protocol error names the fix,
    not the network."""
    from psycopg import errors as e

    from interlock.storage.postgres_conn import cause

    said = cause(e.ProtocolViolation(
        'bind message supplies 2 parameters, but prepared statement "_pg3_3" requires 0'))
    assert said is not None and "prepare_threshold=none" in said
    assert cause(e.ProtocolViolation("unexpected message type 0x50")) is None


def test_health_says_live_updates_are_down_while_the_listen_connection_is(
        schema: str, caplog: pytest.LogCaptureFixture) -> None:
    """A LISTEN URL that cannot be reached: the store works (writes go on, changes are seen
    at the next poll), /api/health's store check says live updates are down and why, and the
    reconnect attempts are logged at warning once, not every few seconds."""
    caplog.set_level(logging.DEBUG, logger="interlock.storage")
    store = PostgresCheckpointer(f"{PG_DSN}?schema={schema}",
                                 listen_dsn="postgresql://nobody:Pw-listen-9@127.0.0.1:1/test"
                                            "?connect_timeout=1")
    stop = store.on_signal("changes", lambda: None)
    time.sleep(3.5)  # a few reconnect attempts (0.1, 0.2, 0.4, 0.8, 1.6 s apart)
    health = run(store.health())
    assert health.writes is True
    assert health.live_updates is False and "LISTEN connection" in (health.live_reason or "")
    failed = [r for r in caplog.records if "listening for changes" in r.getMessage()]
    assert len(failed) >= 3
    assert [r.levelno for r in failed].count(logging.WARNING) == 1, \
        [(r.levelname, r.getMessage()) for r in failed]
    assert all("Pw-listen-9" not in r.getMessage() for r in caplog.records)
    stop()
    run(store.close())


def test_a_lease_renewal_whose_answer_is_lost_does_not_cost_the_result(schema: str) -> None:
    """Invariant 2 (a known outcome is never turned into "unknown"): while a tool runs, a
    lease renewal reaches Postgres but its answer is lost (the connection is cut after the
    server ran it). The run's result write then finds the version that renewal made: it is
    this run's own, so the result is stored, not refused as another writer's (which left the
    call to be declared outcome unknown once the lease ran out, and run again on approval)."""
    from datetime import timedelta

    from interlock import HumanInTheLoop, tool
    from pg_proxy import CuttingProxy

    proxy = CuttingProxy()
    proxy.start()
    gate, started, runs = threading.Event(), threading.Event(), []

    @tool
    def pay(amount: int) -> str:
        """Pay an amount."""
        runs.append(amount)
        started.set()
        gate.wait(30)
        return f"paid {amount}"

    url = PG_DSN.replace(":5432/", f":{proxy.port}/", 1)
    store = PostgresCheckpointer(f"{url}?prepare_threshold=none", schema=schema)
    agent = Agent(model=ScriptedModel([{"name": "pay", "args": {"amount": 7}}, "done."]),
                  tools=[pay], middleware=[HumanInTheLoop(interrupt_on={"pay": True})],
                  checkpointer=store, lease=timedelta(seconds=0.9))
    out: dict[str, Any] = {}
    try:
        assert agent.invoke("pay 7", thread_id="t").interrupted
        worker = threading.Thread(target=lambda: out.update(
            r=agent.resume("t", [{"type": "approve"}])))
        worker.start()
        assert started.wait(30)
        proxy.lose_next_answer()  # the next write is a renewal (every 0.3 s)
        deadline = time.monotonic() + 20
        while proxy.counts.after < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proxy.counts.after == 1
        time.sleep(0.5)  # further renewals compare against the version that one made
        gate.set()
        worker.join(60)
        assert out["r"].status == "completed" and out["r"].output == "done."
        (entry,) = agent.journal("t")
        assert entry.state == "succeeded" and entry.result is not None
        assert entry.result.content == "paid 7" and runs == [7]
        kinds = [a.kind for a in agent.audit("t")]
        assert "outcome_unknown" not in kinds and kinds.count("tool_finished") == 1
        assert not agent.keeps_unstored("t")
    finally:
        gate.set()
        agent.close()
        proxy.stop()
