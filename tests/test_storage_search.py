"""Text search and counts of the thread list, from stored columns, on every backend."""

from __future__ import annotations

import itertools
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import PG_DSN
from interlock import Checkpointer, Interrupt, Reviewer, ThreadRecord
from interlock.authz import facts_of, may_read, read_keys, reviewer_keys
from interlock.storage.base import Commit, search_key, search_text
from test_storage_conformance import T0, create, run, thread

if TYPE_CHECKING:
    from conftest import StoreFactory


def review(iid: str, name: str, args: dict[str, object]) -> Interrupt:
    return Interrupt(id=iid, kind="review", created_at=T0, value={
        "action_requests": [{"name": name, "args": args}], "review_configs": []})


def test_search_matches_id_preview_tools_arguments_and_questions(stores: StoreFactory) -> None:
    store = stores()
    run(create(store, "t-sql", status="interrupted", preview="Delete the old orders",
               pending=[review("i1", "execute_sql", {"query": "DELETE FROM Orders"})]))
    run(create(store, "t-mail", status="interrupted", preview="Write to the customer",
               at=T0 + timedelta(seconds=1),
               pending=[review("i2", "send_email", {"to": "Ann@Example.com"})]))
    run(create(store, "t-ask", status="interrupted", preview="Refund", at=T0 + timedelta(seconds=2),
               pending=[Interrupt(id="q", kind="input", value="Which amount, Ünal?",
                                  created_at=T0)]))
    run(create(store, "t-done", status="completed", preview="delete everything",
               at=T0 + timedelta(seconds=3)))

    def ids(**kw: object) -> list[str]:
        return [t.thread_id for t in run(store.list_threads(**kw))]  # type: ignore[arg-type]

    assert ids(search="DELETE") == ["t-done", "t-sql"]
    assert ids(status="interrupted", search="delete") == ["t-sql"]
    assert ids(search="execute_sql") == ["t-sql"]
    assert ids(search="ann@example") == ["t-mail"]
    assert ids(search="ünal") == ["t-ask"]
    assert ids(search="t-mail") == ["t-mail"]
    assert ids(search="100%_") == []
    assert ids(search="  ") == ["t-done", "t-ask", "t-mail", "t-sql"]
    assert run(store.count_threads()) == 4
    assert run(store.count_threads(status="interrupted")) == 3
    assert run(store.count_threads(status="interrupted", search="delete")) == 1
    assert run(store.count_threads(search="nothing like this")) == 0


def test_search_pages_with_the_cursor(stores: StoreFactory) -> None:
    store = stores()
    for i in range(7):
        run(create(store, f"t{i}", status="interrupted", preview=f"job {i % 2}",
                   at=T0 + timedelta(seconds=i // 3)))
    first = run(store.list_threads(status="interrupted", search="job 0", limit=2))
    last = first[-1]
    rest = run(store.list_threads(status="interrupted", search="job 0", limit=5,
                                  before=last.updated_at, before_id=last.thread_id))
    assert [t.thread_id for t in first + rest] == ["t6", "t4", "t2", "t0"]


def test_search_text_is_bounded_and_lower_case() -> None:
    t = thread("T", 1, preview="A" * 5000)
    text = search_text(t)
    assert text.startswith("t a") and len(text) <= 600


# -- the same literal substring on every backend and every path of its indexes ----------------

WORDS = ["OR", "NEAR", "AND", "NOT", "near(", "a*", '"', "'", "%", "_", "\\", "^", ":", "-",
         "()", "{x}", "Ünal", "straße", "İ", "Σς", "😀", " ", "  ", "ab", "Ab", "abc", "x"]
PIECES = st.one_of(st.sampled_from(WORDS), st.text(alphabet="abAB%_\"' *", max_size=4))
PREVIEW = st.lists(PIECES, max_size=8).map("".join)


def _listing_order(rows: dict[str, ThreadRecord]) -> list[ThreadRecord]:
    return sorted(rows.values(), key=lambda t: (t.updated_at, t.thread_id), reverse=True)


def _all_pages(store: Checkpointer, page: int, **kw: Any) -> list[str]:
    out: list[str] = []
    cursor: ThreadRecord | None = None
    while True:
        rows = run(store.list_threads(limit=page, **kw, **(
            {"before": cursor.updated_at, "before_id": cursor.thread_id} if cursor else {})))
        out += [t.thread_id for t in rows]
        if len(rows) < page:
            return out
        cursor = rows[-1]


def _pg_forced_index_scans(stores: StoreFactory) -> Checkpointer:
    """A second checkpointer on the same schema whose planner may not read tables in full, so
    that searches go through the trigram index even on a small table."""
    from psycopg.conninfo import make_conninfo

    from conftest import PG_DSN
    from interlock import PostgresCheckpointer

    store = PostgresCheckpointer(make_conninfo(
        PG_DSN, options="-c enable_seqscan=off -c enable_indexscan=off"),
        schema=stores.pg_schema)
    stores.made.append(store)
    return store


def test_search_is_a_literal_case_insensitive_substring_on_every_backend(
        stores: StoreFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every backend lists, pages and counts exactly the threads whose search text holds the
    query as a plain substring (Python's ``in`` after lower-casing, what the memory store
    does): FTS5 syntax, LIKE wildcards and quotes are literal, short queries work, and a
    changed thread is found by its new text only. SQLite is checked with candidates from
    its trigram index and with the scan in listing order; Postgres with the planner's
    choice and with scans of the trigram index forced."""
    from interlock.storage import sqlite

    store = stores()
    readers = [store]
    if stores.kind == "postgres":
        readers.append(_pg_forced_index_scans(stores))
    stored: dict[str, ThreadRecord] = {}
    n = itertools.count()

    @settings(max_examples=60, deadline=None, derandomize=True)
    @given(previews=st.lists(PREVIEW, min_size=1, max_size=4), change=st.booleans(),
           query=st.one_of(PREVIEW, st.tuples(st.integers(0, 40), st.integers(1, 6),
                                              st.booleans())),
           cap=st.sampled_from([1, 3, 2000]))
    @example(previews=['say "hi" OR NEAR(a b) a*'], change=False, query='"hi" OR', cap=2000)
    @example(previews=["100%_done"], change=False, query="0%_", cap=2000)
    @example(previews=["STRASSE straße"], change=True, query="ß", cap=2000)
    def check(previews: list[str], change: bool, query: str | tuple[int, int, bool],
              cap: int) -> None:
        monkeypatch.setattr(sqlite, "FTS_CANDIDATES", cap)
        for i, preview in enumerate(previews):
            tid = f"s{next(n)}"
            at = T0 + timedelta(seconds=len(stored) % 3)
            rec = run(create(store, tid, status="interrupted" if i % 2 else "idle",
                             preview=preview, at=at))
            if change and stored:  # a changed thread: found by its new text only
                old = stored[min(stored)]
                rec_old = old.model_copy(update={"version": old.version + 1, "preview": preview,
                                                 "updated_at": at})
                run(store.commit(Commit(thread=rec_old), expected_version=old.version))
                stored[old.thread_id] = rec_old
            stored[tid] = rec
        if isinstance(query, tuple):  # a piece of a stored text, its case changed
            texts = [search_text(t) for t in stored.values()]
            text = texts[query[0] % len(texts)]
            start = query[0] % max(1, len(text))
            piece = text[start:start + query[1]]
            query = piece.swapcase() if query[2] else piece
        needle = search_key(query)
        for status in (None, "interrupted"):
            want = [t.thread_id for t in _listing_order(stored)
                    if needle in search_text(t) and status in (None, t.status)]
            for reader in readers:
                got = _all_pages(reader, 2, status=status, search=query)
                assert got == want, (query, status, cap)
                assert run(reader.count_threads(status=status, search=query)) == len(want)
                assert [t.thread_id for t in run(reader.list_threads(
                    status=status, search=query, limit=100))] == want[:100]

    check()


# -- a reviewer's listing: exactly what authz allows ---------------------------------------------

ROLES = ["dba", "ops", "sec"]
PEOPLE = ["alice", "bob", "carol"]


def _call(i: int, reviewers: list[str] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    return ({"tool_call_id": f"c{i}", "name": "execute_sql", "args": {"q": i},
             "description": "run"},
            {"action_name": "execute_sql", "allowed_decisions": ["approve", "reject"],
             "reviewers": reviewers})


ACCESS = st.fixed_dictionaries({
    "created_by": st.none() | st.sampled_from(PEOPLE),
    "deciders": st.lists(st.sampled_from(PEOPLE), max_size=2, unique=True),
    "calls": st.lists(st.none() | st.lists(st.sampled_from(ROLES), min_size=1, max_size=2,
                                           unique=True), max_size=2),
    "question": st.booleans(),
    "status": st.sampled_from(["interrupted", "completed"]),
})


def _with_access(tid: str, version: int, at: datetime, access: dict[str, Any]) -> ThreadRecord:
    pending: list[Interrupt] = []
    if access["status"] == "interrupted":
        if access["calls"]:
            pairs = [_call(i, r) for i, r in enumerate(access["calls"])]
            pending.append(Interrupt(id=f"{tid}-r", kind="review", created_at=T0, value={
                "action_requests": [a for a, _ in pairs],
                "review_configs": [c for _, c in pairs]}))
        if access["question"]:
            pending.append(Interrupt(id=f"{tid}-q", kind="input", value="which?",
                                     created_at=T0))
    return thread(tid, version, status=access["status"], at=at, pending=pending,
                  created_by=access["created_by"], deciders=access["deciders"])


def test_a_reviewer_lists_exactly_the_threads_authz_lets_it_read(stores: StoreFactory) -> None:
    """``list_threads(readers=reviewer_keys(r))`` on every backend, paged with the cursor and
    with a text filter, lists exactly the threads ``authz.may_read`` allows, in listing order,
    also after threads change (a decision taken, a call decided, the request answered)."""
    store = stores()
    stored: dict[str, ThreadRecord] = {}
    n = itertools.count()
    reviewers = [Reviewer(p, frozenset(r)) for p in [*PEOPLE, "dave"]
                 for r in ([], ["dba"], ["ops", "sec"])]

    @settings(max_examples=25, deadline=None, derandomize=True)
    @given(new=st.lists(ACCESS, min_size=1, max_size=5), changed=st.lists(ACCESS, max_size=2))
    def check(new: list[dict[str, Any]], changed: list[dict[str, Any]]) -> None:
        for access in new:
            i = next(n)
            rec = _with_access(f"r{i}", 1, T0 + timedelta(seconds=i % 4), access)
            run(store.commit(Commit(thread=rec, readers=read_keys(rec)), expected_version=None))
            stored[rec.thread_id] = rec
        for j, access in enumerate(changed):
            old = stored[sorted(stored)[j * 7 % len(stored)]]
            rec = _with_access(old.thread_id, old.version + 1,
                               T0 + timedelta(seconds=old.version + 5), access)
            run(store.commit(Commit(thread=rec, readers=read_keys(rec)),
                             expected_version=old.version))
            stored[rec.thread_id] = rec
        for rv in reviewers:
            for status, search in ((None, None), ("interrupted", None), (None, "r1")):
                want = [t.thread_id for t in _listing_order(stored)
                        if may_read(rv, facts_of(t)) and status in (None, t.status)
                        and (search is None or search in search_text(t))]
                got = _all_pages(store, 2, status=status, search=search,
                                 readers=reviewer_keys(rv))
                assert got == want, (rv, status, search)

    check()


def test_read_keys_agree_with_may_read() -> None:
    """The keys stores index say the same as the rule itself, for any thread and reviewer."""

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(access=ACCESS, person=st.sampled_from([*PEOPLE, "dave"]),
           roles=st.lists(st.sampled_from(ROLES), max_size=3, unique=True))
    def check(access: dict[str, Any], person: str, roles: list[str]) -> None:
        t = _with_access("t", 1, T0, access)
        rv = Reviewer(person, frozenset(roles))
        assert may_read(rv, facts_of(t)) == bool(set(read_keys(t)) & set(reviewer_keys(rv)))

    check()


# -- migrations and a Postgres without pg_trgm --------------------------------------------------


OLD_THREAD = _with_access("old", 2, T0, {"created_by": "bob", "deciders": [],
                                         "calls": [["dba"]], "question": False,
                                         "status": "interrupted"}).model_copy(
    update={"preview": "Drop the Orders table"})
"""A thread stored before the readers index: bob's, with a call for the role ``dba``."""


def _version_4_file(path: Path) -> None:
    """A SQLite file as interlock wrote it at schema version 4, holding ``OLD_THREAD``."""
    from interlock.storage.sqlite import MIGRATIONS

    t = OLD_THREAD
    conn = sqlite3.connect(path)
    for script in MIGRATIONS[:4]:
        conn.executescript(script)
    conn.execute("CREATE TABLE interlock_meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.execute("INSERT INTO interlock_meta VALUES ('schema_version', '4')")
    conn.execute("INSERT INTO interlock_threads (thread_id, status, version, updated_at, data, "
                 "change_seq, search) VALUES (?, ?, ?, ?, ?, 1, 'stale text')",
                 ("old", t.status, 2, T0.isoformat(), t.model_dump_json()))
    conn.commit()
    conn.close()


def test_a_version_4_sqlite_file_gets_its_search_index_and_readers(
        sqlite_stores: StoreFactory) -> None:
    """Files written before the trigram index: every row's search text is computed again
    (changes stored then did not update it), indexed, and its readers recorded."""
    _version_4_file(sqlite_stores.sqlite_path)
    store = sqlite_stores()
    assert [r.thread_id for r in run(store.list_threads(search="orders table"))] == ["old"]
    assert run(store.list_threads(search="stale text")) == []
    alice, carol = Reviewer("alice", frozenset({"dba"})), Reviewer("carol")
    assert [r.thread_id for r in run(store.list_threads(
        readers=reviewer_keys(alice)))] == ["old"]
    assert run(store.list_threads(readers=reviewer_keys(carol))) == []
    conn = sqlite3.connect(sqlite_stores.sqlite_path)
    try:
        assert conn.execute("SELECT count(*) FROM interlock_search WHERE interlock_search "
                            "MATCH '\"orders\"'").fetchone() == (1,)
    finally:
        conn.close()


def test_an_old_sqlite_file_with_threads_needs_the_read_keys_rule(tmp_path: Path) -> None:
    """The store does not know who may read a thread: opened without ``read_keys``, a file
    whose threads have no read keys yet is refused with an error that names the fix, and is
    left as it was; opened with it, its threads are indexed."""
    from interlock import SqliteCheckpointer
    from interlock.errors import ConfigurationError

    path = tmp_path / "v4.db"
    _version_4_file(path)
    bare = SqliteCheckpointer(path)
    with pytest.raises(ConfigurationError, match=r"read_keys=interlock\.authz\.read_keys"):
        run(bare.list_threads())
    run(bare.close())
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT value FROM interlock_meta WHERE key='schema_version'"
                            ).fetchone() == ("4",)
        assert conn.execute("SELECT name FROM sqlite_master WHERE name='interlock_readers'"
                            ).fetchone() is None
    finally:
        conn.close()
    store = SqliteCheckpointer(path, read_keys=read_keys)
    try:
        alice = Reviewer("alice", frozenset({"dba"}))
        assert [r.thread_id for r in run(store.list_threads(
            readers=reviewer_keys(alice)))] == ["old"]
    finally:
        run(store.close())


def test_an_agent_gives_an_old_file_the_read_keys_rule(tmp_path: Path) -> None:
    """An application that upgrades keeps writing ``Agent(checkpointer=SqliteCheckpointer(
    path))``: the agent hands the store the rule, so the old file's threads are indexed."""
    from interlock import Agent, ScriptedModel, SqliteCheckpointer

    path = tmp_path / "v4.db"
    _version_4_file(path)
    store = SqliteCheckpointer(path)
    agent = Agent(model=ScriptedModel(["ok"]), checkpointer=store)
    try:
        alice = Reviewer("alice", frozenset({"dba"}))
        assert [r.thread_id for r in run(store.list_threads(
            readers=reviewer_keys(alice)))] == ["old"]
    finally:
        agent.close()


def test_a_new_file_needs_no_read_keys_rule(tmp_path: Path) -> None:
    """Only threads stored before the index need the rule: a new file opens without it, and
    a commit's ``readers`` are what a reviewer's listing matches."""
    from interlock import SqliteCheckpointer

    store = SqliteCheckpointer(tmp_path / "new.db")
    try:
        run(store.commit(Commit(thread=OLD_THREAD.model_copy(update={"version": 1}),
                                readers=["role:dba"]), expected_version=None))
        assert [r.thread_id for r in run(store.list_threads(
            readers=reviewer_keys(Reviewer("alice", frozenset({"dba"})))))] == ["old"]
        assert run(store.list_threads(readers=reviewer_keys(Reviewer("bob")))) == []
    finally:
        run(store.close())


def old_pg_schema(conn: Any, schema: str, version: int) -> None:
    """Make ``schema`` as a release at schema ``version`` left it (empty tables)."""
    from interlock.storage import postgres

    conn.execute(f'CREATE SCHEMA "{schema}"')
    conn.execute(f'CREATE TABLE "{schema}".interlock_meta (key TEXT PRIMARY KEY, '
                 f"value TEXT NOT NULL)")
    q = postgres._Statements(schema)
    for migration in postgres.MIGRATIONS[:version]:
        for stmt in migration:
            if isinstance(stmt, str):
                conn.execute(q.fmt(stmt))
            else:
                stmt(conn, q)
    conn.execute(f'INSERT INTO "{schema}".interlock_meta VALUES (%s, %s)',
                 ["schema_version", str(version)])


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_version_6_postgres_schema_gets_its_readers(stores: StoreFactory) -> None:
    """A Postgres schema written before the readers index: refused without ``read_keys``
    (nothing changed), its threads indexed with it."""
    import psycopg

    from interlock import PostgresCheckpointer
    from interlock.errors import ConfigurationError

    s = stores.pg_schema
    t = OLD_THREAD
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        old_pg_schema(conn, s, 6)
        conn.execute(f'INSERT INTO "{s}".interlock_threads (thread_id, status, version, '
                     f"updated_at, data) VALUES (%s, %s, %s, %s, %s)",
                     [t.thread_id, t.status, t.version, T0, t.model_dump_json()])
    bare = PostgresCheckpointer(PG_DSN, schema=s)
    try:
        with pytest.raises(ConfigurationError, match=r"read_keys=interlock\.authz\.read_keys"):
            run(bare.list_threads())
    finally:
        run(bare.close())
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        assert conn.execute(f"SELECT value FROM \"{s}\".interlock_meta "
                            f"WHERE key = 'schema_version'").fetchone() == ("6",)
    store = stores()
    alice, carol = Reviewer("alice", frozenset({"dba"})), Reviewer("carol")
    assert [r.thread_id for r in run(store.list_threads(
        readers=reviewer_keys(alice)))] == ["old"]
    assert run(store.list_threads(readers=reviewer_keys(carol))) == []


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_postgres_has_a_trigram_index(stores: StoreFactory) -> None:
    import psycopg

    from conftest import PG_DSN

    run(create(stores(), "t1", preview="hello"))
    with psycopg.connect(PG_DSN) as conn:
        assert conn.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND "
                            "indexname = 'interlock_threads_trigrams'",
                            [stores.pg_schema]).fetchone() is not None


def test_postgres_without_pg_trgm_searches_without_the_index(
        caplog: pytest.LogCaptureFixture) -> None:
    """A role that may not create the extension, in a database that does not have it: the
    tables are made without the trigram index, a warning says how to add it, and searches
    give the same answers."""
    import uuid

    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from conftest import PG_DSN
    from interlock import PostgresCheckpointer

    name = f"il_notrgm_{uuid.uuid4().hex[:8]}"
    assert conninfo_to_dict(PG_DSN)  # a DSN that names the server to create them on
    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {name} LOGIN")
        admin.execute(f"CREATE DATABASE {name}")
    try:
        with psycopg.connect(make_conninfo(PG_DSN, dbname=name), autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA app AUTHORIZATION {name}")
        store = PostgresCheckpointer(make_conninfo(PG_DSN, dbname=name, user=name),
                                     schema="app")
        try:
            with caplog.at_level("WARNING", logger="interlock.storage.postgres"):
                for i, preview in enumerate(["100% of Orders", "orders_2", "Other"]):
                    run(create(store, f"t{i}", preview=preview,
                               at=T0 + timedelta(seconds=i)))
            assert "pg_trgm could not be created" in caplog.text
            assert "CREATE INDEX interlock_threads_trigrams" in caplog.text
            ids = [[t.thread_id for t in run(store.list_threads(search=q))]
                   for q in ("ORDERS", "0% ", "s_2", "o")]
            assert ids == [["t1", "t0"], ["t0"], ["t1"], ["t2", "t1", "t0"]]
            assert run(store.count_threads(search="orders")) == 2
        finally:
            run(store.close())
        with psycopg.connect(make_conninfo(PG_DSN, dbname=name), autocommit=True) as admin:
            assert admin.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'"
                                 ).fetchone() is None
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            admin.execute(f"DROP ROLE IF EXISTS {name}")
