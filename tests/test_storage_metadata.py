"""The thread metadata filter (LangGraph's ``threads.search(metadata=...)``) on every backend:
the same answers as Postgres's ``jsonb @>``, through every listing path (status, pages, a
reviewer's listing, sub-agents left out), and on Postgres from a GIN index, not a scan."""

from __future__ import annotations

import asyncio
import itertools
import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import PG_DSN
from interlock import Reviewer, ThreadRecord
from interlock.authz import read_keys, reviewer_keys
from interlock.storage import Commit, ParentLink, metadata_contains, metadata_index
from test_storage_conformance import T0, create, run, thread
from test_storage_search import _all_pages, _listing_order, old_pg_schema

if TYPE_CHECKING:
    from conftest import StoreFactory

# strings that collide once NUL or U+FFFD are rewritten carelessly, numbers that are equal
# as JSON (1, 1.0) and a boolean that Python compares equal to 1 but JSON does not
SCALARS = st.sampled_from(["a", "A", "", "\x00", "\ufffd", "\ufffd0000", "a\x00b", "ann",
                           1, 1.0, 2, True, False, None, 0])
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["k", "\x00", "user"]), inner, max_size=2), max_leaves=6)
KEYS = st.sampled_from(["user", "team", "\x00", "tags"])
METADATA = st.dictionaries(KEYS, VALUES, max_size=3)


def test_metadata_contains_is_jsonb_containment() -> None:
    """The rule every store applies, in the cases where JSON and Python differ."""
    assert metadata_contains({"user": "ann", "team": "ops"}, {"user": "ann"})
    assert not metadata_contains({"user": "ann"}, {"user": "ann", "team": "ops"})
    assert metadata_contains({"n": 1}, {"n": 1.0})
    assert not metadata_contains({"n": 1}, {"n": True})  # Python: True == 1
    assert not metadata_contains({"n": 0}, {"n": False})
    assert metadata_contains({"tags": ["a", "b"]}, {"tags": ["b"]})
    assert not metadata_contains({"tags": ["a", "b"]}, {"tags": "a"})  # only at the top
    assert metadata_contains({"o": {"a": 1, "b": 2}}, {"o": {"a": 1}})
    assert not metadata_contains({"o": None}, {"o": {}})
    assert metadata_contains({"o": None}, {"o": None})
    assert metadata_contains({}, {})


def test_metadata_is_filtered_as_jsonb_on_every_backend(stores: StoreFactory) -> None:
    """Every backend lists, pages and (for a reviewer) restricts exactly the threads whose
    metadata contains the filter, as Python's :func:`metadata_contains` decides; on Postgres
    that rule is also checked against ``jsonb @>`` itself, with the rewritten forms of NUL
    and U+FFFD that the column holds."""
    store = stores()
    stored: dict[str, ThreadRecord] = {}
    n = itertools.count()
    ann = Reviewer("ann")
    conn = None
    if stores.kind == "postgres":
        import psycopg

        conn = psycopg.connect(PG_DSN, autocommit=True)

    @settings(max_examples=40, deadline=None, derandomize=True)
    @given(metas=st.lists(METADATA, min_size=1, max_size=4), query=METADATA,
           pick=st.integers(0, 50), by_ann=st.lists(st.booleans(), min_size=4, max_size=4))
    @example(metas=[{"user": "\x00"}, {"user": "\ufffd0000"}, {"user": "\ufffd"}],
             query={"user": "\x00"}, pick=0, by_ann=[True] * 4)
    @example(metas=[{"user": 1}, {"user": True}, {"user": 1.0}], query={"user": 1}, pick=0,
             by_ann=[False] * 4)
    def check(metas: list[dict[str, Any]], query: dict[str, Any], pick: int,
              by_ann: list[bool]) -> None:
        for i, meta in enumerate(metas):
            tid = f"m{next(n)}"
            child = ParentLink(thread_id="p", tool_call_id="c", tool_name="t", agent="a") \
                if i == 3 else None
            stored[tid] = run(create(
                store, tid, status="interrupted" if i % 2 else "idle", metadata=meta,
                at=T0 + timedelta(seconds=len(stored) % 3), parent=child,
                created_by="ann" if by_ann[i] else None))
        # a filter taken from a stored thread half of the time (so that some match)
        if pick % 2 and query:
            source = list(stored.values())[pick % len(stored)].metadata
            query = {k: v for k, v in source.items() if k in query} or query
        if conn is not None:
            for t in stored.values():
                row = conn.execute("SELECT coalesce(%s::jsonb, '{}') @> %s::jsonb",
                                   [metadata_index(t.metadata), metadata_index(query) or "{}"]
                                   ).fetchone()
                assert row is not None and row[0] is metadata_contains(t.metadata, query)
        for status in (None, "interrupted"):
            want = [t for t in _listing_order(stored) if metadata_contains(t.metadata, query)
                    and status in (None, t.status)]
            assert _all_pages(store, 2, status=status, metadata=query) == [
                t.thread_id for t in want], (query, status)
            top = [t.thread_id for t in want if t.parent is None]
            assert _all_pages(store, 3, status=status, metadata=query, top_level=True) == top
            readable = [t.thread_id for t in want if t.created_by == "ann"]
            assert _all_pages(store, 2, status=status, metadata=query,
                          readers=reviewer_keys(ann)) == readable

    try:
        check()
    finally:
        if conn is not None:
            conn.close()


def test_a_changed_thread_is_found_by_its_new_metadata(stores: StoreFactory) -> None:
    store = stores()
    rec = run(create(store, "t1", metadata={"user": "ann"}))
    run(create(store, "t2", metadata={"user": "bob"}, at=T0 + timedelta(seconds=1)))
    moved = rec.model_copy(update={"version": 2, "metadata": {"user": "bob"},
                                   "updated_at": T0 + timedelta(seconds=2)})
    run(store.commit(Commit(thread=moved, readers=read_keys(moved)), expected_version=1))
    assert [t.thread_id for t in run(store.list_threads(metadata={"user": "bob"}))] == [
        "t1", "t2"]
    assert run(store.list_threads(metadata={"user": "ann"})) == []
    cleared = moved.model_copy(update={"version": 3, "metadata": {}})
    run(store.commit(Commit(thread=cleared, readers=read_keys(cleared)), expected_version=2))
    assert [t.thread_id for t in run(store.list_threads(metadata={"user": "bob"}))] == ["t2"]
    assert len(run(store.list_threads(metadata={}))) == 2  # an empty filter filters nothing


# -- Postgres: the GIN index answers the filter ------------------------------------------------

THREADS = 4000
USERS = 800


def _plan_nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    out = [plan]
    for child in plan.get("Plans", []):
        out += _plan_nodes(child)
    return out


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_postgres_answers_a_metadata_search_from_its_gin_index(stores: StoreFactory) -> None:
    """4,000 threads of 800 users: a search for one user's threads (an admin's listing, and
    that of a reviewer who may read half of the threads) is planned as a scan of the
    metadata's GIN index and reads only that user's rows, however old they are; the answers
    are those of the filter."""
    import psycopg

    store = stores()

    async def fill() -> None:
        async def one(i: int) -> None:
            rec = thread(f"t{i:05d}", 1, metadata={"user": f"u{i % USERS}", "n": i},
                         at=T0 + timedelta(seconds=i),
                         created_by="owner" if i % 2 else "other")
            await store.commit(Commit(thread=rec, readers=read_keys(rec)),
                               expected_version=None)

        for start in range(0, THREADS, 200):
            await asyncio.gather(*(one(i) for i in range(start, min(start + 200, THREADS))))

    run(fill())
    wanted = {"user": "u7"}
    oldest_first = [f"t{i:05d}" for i in range(7, THREADS, USERS)]
    assert [t.thread_id for t in run(store.list_threads(metadata=wanted, limit=50))] == \
        oldest_first[::-1]
    assert [t.thread_id for t in run(store.list_threads(
        metadata=wanted, readers=reviewer_keys(Reviewer("owner")), limit=50))] == \
        oldest_first[::-1]  # all odd: the owner's
    assert run(store.list_threads(metadata=wanted,
                                  readers=reviewer_keys(Reviewer("other")))) == []
    s = stores.pg_schema
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'ANALYZE "{s}".interlock_threads')
        conn.execute(f'ANALYZE "{s}".interlock_readers')
        assert conn.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND "
                            "indexname = 'interlock_threads_metadata'", [s]
                            ).fetchone() == (f"CREATE INDEX interlock_threads_metadata ON "
                                             f"{s}.interlock_threads USING gin (metadata "
                                             f"jsonb_path_ops)",)
        sql = store._sql  # type: ignore[attr-defined]  # the statement the store runs
        for readers in (None, reviewer_keys(Reviewer("owner"))):
            query, params = sql.select("t.data", status=None, search=None, readers=readers,
                                       limit=10, metadata=wanted)
            (plan,), = conn.execute(b"EXPLAIN (ANALYZE, FORMAT JSON) " + query.as_bytes(conn),
                                    params).fetchone()
            nodes = _plan_nodes(plan["Plan"])
            scans = {(node["Node Type"], node.get("Relation Name", node.get("Index Name")))
                     for node in nodes}
            assert ("Bitmap Index Scan", "interlock_threads_metadata") in scans, \
                json.dumps(plan, indent=1)
            assert ("Seq Scan", "interlock_threads") not in scans
            # rows of the table read: the 5 of u7 (a lossy page may add a few), not 4,000
            heap = [node for node in nodes if node["Node Type"] == "Bitmap Heap Scan"]
            assert heap and sum(node["Actual Rows"] + node.get("Rows Removed by Index Recheck",
                                                               0) for node in heap) <= 10


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_version_8_postgres_schema_gets_its_metadata_column(stores: StoreFactory) -> None:
    """Threads stored before the metadata column (NUL in a value included, which ``jsonb``
    cannot hold as it is) are found by their metadata after the migration."""
    import psycopg

    from interlock.storage import postgres

    s = stores.pg_schema
    old = [thread("a", 1, metadata={"user": "a\x00b", "tags": ["x", "y"]}),
           thread("b", 1, metadata={"user": "ann"}, at=T0 + timedelta(seconds=1)),
           thread("c", 1, at=T0 + timedelta(seconds=2))]
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        old_pg_schema(conn, s, 8)
        for t in old:
            conn.execute(f'INSERT INTO "{s}".interlock_threads (thread_id, status, version, '
                         f"updated_at, data) VALUES (%s, %s, %s, %s, %s)",
                         [t.thread_id, t.status, t.version, t.updated_at,
                          t.model_dump_json(exclude_defaults=True)])
    store = stores()
    assert [t.thread_id for t in run(store.list_threads(metadata={"user": "a\x00b"}))] == ["a"]
    assert [t.thread_id for t in run(store.list_threads(metadata={"tags": ["y"]}))] == ["a"]
    assert [t.thread_id for t in run(store.list_threads(metadata={"user": "ann"}))] == ["b"]
    assert run(store.list_threads(metadata={"user": "a"})) == []
    assert len(run(store.list_threads())) == 3
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        assert conn.execute(f"SELECT value FROM \"{s}\".interlock_meta "
                            f"WHERE key = 'schema_version'").fetchone() == (
            str(postgres.SCHEMA_VERSION),)
