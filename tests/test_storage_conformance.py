"""One conformance suite for every checkpointer (SPEC §5.4): memory, SQLite and Postgres.

Each test talks to the storage Protocol directly (records built by hand), so a backend that
passes behaves the same as the others under the engine: compare-and-set commits that are
atomic, append-only messages, a journal upserted per call, ordered and pageable listings,
an audit log in insertion order, schema versions, and data that survives a reopen.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import sys
import threading
from collections.abc import Coroutine, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import PG_DSN
from interlock import (
    Agent,
    AssistantMessage,
    AuditRecord,
    Checkpointer,
    HumanInTheLoop,
    Interrupt,
    MissingDependency,
    ScriptedModel,
    StorageError,
    SystemMessage,
    ThreadRecord,
    ToolCall,
    ToolMessage,
    UserMessage,
    tool,
)
from interlock.audit import GENESIS, make_record
from interlock.authz import read_keys
from interlock.messages import Message
from interlock.outbox import Delivery, Notice, NoticeCall, OutboxEvent
from interlock.storage import from_url
from interlock.storage.base import (
    CallState,
    Commit,
    JournalEntry,
    ParentLink,
    RememberedApproval,
    ThreadStatus,
    VersionConflict,
)

if TYPE_CHECKING:
    from conftest import StoreFactory

T = TypeVar("T")
T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def thread(tid: str, version: int, *, status: ThreadStatus = "idle", messages: int = 0,
           turn: int | None = None, at: datetime = T0, **extra: Any) -> ThreadRecord:
    return ThreadRecord(thread_id=tid, status=status, version=version, created_at=T0,
                        updated_at=at, message_count=messages, turn=turn, **extra)


def entry(call_id: str, turn: int, position: int, state: CallState = CallState.PROPOSED,
          **extra: Any) -> JournalEntry:
    return JournalEntry(tool_call_id=call_id, turn=turn, position=position, name="write_file",
                        args={"path": f"/tmp/{call_id}"}, state=state, updated_at=T0, **extra)


def audit_rows(tid: str, first_seq: int, kinds: list[str]) -> list[AuditRecord]:
    rows: list[AuditRecord] = []
    prev = GENESIS
    for i, kind in enumerate(kinds):
        rec = make_record(thread_id=tid, seq=first_seq + i, prev_hash=prev, ts=T0, kind=kind,
                          actor="tester", data={"i": i})
        prev = rec.hash
        rows.append(rec)
    return rows


async def create(store: Checkpointer, tid: str, messages: list[Message] | None = None,
                 **kw: Any) -> ThreadRecord:
    msgs = messages or []
    rec = thread(tid, 1, messages=len(msgs), **kw)
    await store.commit(Commit(thread=rec, messages=msgs, readers=read_keys(rec)),
                       expected_version=None)
    return rec


async def append(store: Checkpointer, rec: ThreadRecord, messages: Sequence[Message] = (),
                 journal: Sequence[JournalEntry] = (), audit: Sequence[AuditRecord] = (),
                 **updates: Any) -> ThreadRecord:
    new = rec.model_copy(update={"version": rec.version + 1,
                                 "message_count": rec.message_count + len(messages),
                                 "audit_seq": rec.audit_seq + len(audit), **updates})
    await store.commit(Commit(thread=new, messages=list(messages), journal=list(journal),
                              audit=list(audit), readers=read_keys(new)),
                       expected_version=rec.version)
    return new


CONVERSATION: list[Message] = [
    SystemMessage(content="be careful"),
    UserMessage(content="Schreib die Datei — 写文件 \U0001f600 and a NUL \x00 byte"),
    AssistantMessage(content="", tool_calls=[
        ToolCall(id="c1", name="write_file", args={"path": "/a", "n": [1, 2.5, None, True]}),
        ToolCall(id="c2", name="bad", args={}, args_error="not JSON: {"),
    ]),
    ToolMessage(tool_call_id="c1", name="write_file", content="ok", decision="edit"),
    ToolMessage(tool_call_id="c2", name="bad", content="no", status="error"),
]


# ---------------------------------------------------------------------------- threads


def test_load_of_unknown_thread_is_none(stores: StoreFactory) -> None:
    store = stores()
    assert run(store.load("nobody")) is None
    assert run(store.journal("nobody")) == []
    assert run(store.audit(thread_id="nobody")) == []


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_create_then_load_round_trips_every_field(stores: StoreFactory) -> None:
    store = stores()
    pending = Interrupt(id="i1", kind="review", value={"action_requests": [], "x": "ü"},
                        created_at=T0, tool_call_id=None)
    rule = RememberedApproval(tool_name="write_file", created_at=T0, created_by="ann",
                              tool_call_id="c0")
    rec = thread("t1", 1, status="interrupted", messages=len(CONVERSATION), turn=2,
                 pending=[pending], resolved=["i0"], remembered=[rule],
                 lease_owner="host|1|abc", lease_until=T0 + timedelta(minutes=5),
                 hooks={"done": True}, metadata={"k": [1, "v"]}, preview="Schreib",
                 error=None, trace=TRACEPARENT)
    jr = [entry("c1", 2, 0, CallState.PENDING_REVIEW), entry("c2", 2, 1, CallState.FAILED)]
    run(store.commit(Commit(thread=rec, messages=list(CONVERSATION), journal=jr,
                            audit=audit_rows("t1", 1, ["request_raised"])),
                     expected_version=None))
    snap = run(store.load("t1"))
    assert snap is not None
    assert snap.thread == rec
    assert snap.thread.trace == TRACEPARENT  # the run's trace context, for another process
    assert snap.messages == CONVERSATION
    assert snap.journal == {e.tool_call_id: e for e in jr}
    again = run(stores().load("t1"))
    assert again is not None and again.thread.trace == TRACEPARENT


# Every string but lone surrogates (which the engine escapes before storing): NUL, line and
# paragraph separators, astral planes, backslashes and JSON-looking text included.
ANY_TEXT = st.text(max_size=30)


def test_any_text_round_trips(stores: StoreFactory) -> None:
    """Whatever text one backend stores, every backend stores and returns unchanged — in
    messages, tool arguments (keys too), results, the journal, audit rows, pending interrupts
    and the thread row — and a thread holding it loads with its open turn."""
    store = stores()
    n = itertools.count()

    @settings(max_examples=20, deadline=None, derandomize=True)
    @given(text=ANY_TEXT, key=ANY_TEXT)
    @example(text="\x00", key="\x00").via("NUL")
    @example(text='\\u0000 "turn": 7 \u2028\U0010ffff', key="turn").via("JSON-looking")
    def check(text: str, key: str) -> None:
        tid = f"h{next(n)}"
        result = ToolMessage(tool_call_id="c1", name="write_file", content=text)
        messages: list[Message] = [
            UserMessage(content=text),
            AssistantMessage(content=text, tool_calls=[
                ToolCall(id="c1", name="write_file", args={key: text, "n": [text]})]),
        ]
        pending = Interrupt(id="i1", kind="input", value={key: text}, created_at=T0)
        rec = thread(tid, 1, status="interrupted", messages=2, turn=1, preview=text,
                     error=text, metadata={key: text}, pending=[pending])
        older = entry("c0", 0, 0, CallState.SUCCEEDED)
        jr = entry("c1", 1, 0, CallState.INTERRUPTED, result=result)
        jr = jr.model_copy(update={"args": {key: text}, "answers": [text]})
        audit = make_record(thread_id=tid, seq=1, prev_hash=GENESIS, ts=T0, kind="decision",
                            actor=text, data={key: text})
        run(store.commit(Commit(thread=rec, messages=messages, journal=[older, jr],
                                audit=[audit]), expected_version=None))
        snap = run(store.load(tid))
        assert snap is not None
        assert snap.thread == rec and snap.messages == messages
        assert snap.journal == {"c1": jr}  # the open turn only
        assert run(store.journal(tid)) == [older, jr]
        (back,) = run(store.audit(thread_id=tid))
        assert back.model_copy(update={"id": None}) == audit
        done = rec.model_copy(update={"version": 2, "turn": None, "message_count": 3})
        run(store.commit(Commit(thread=done, messages=[result]), expected_version=1))
        again = run(store.load(tid))
        assert again is not None and again.journal == {} and again.messages[-1] == result

    check()


def test_second_create_of_a_thread_conflicts_and_keeps_the_first(stores: StoreFactory) -> None:
    store = stores()
    run(create(store, "t1", [UserMessage(content="first")], preview="first"))
    with pytest.raises(VersionConflict) as err:
        run(create(store, "t1", [UserMessage(content="second")], preview="second"))
    assert err.value.thread_id == "t1" and err.value.expected is None
    snap = run(store.load("t1"))
    assert snap is not None
    assert snap.thread.preview == "first"
    assert snap.messages == [UserMessage(content="first")]


def test_commit_with_wrong_version_stores_nothing(stores: StoreFactory) -> None:
    store = stores()
    rec = run(create(store, "t1", [UserMessage(content="hi")]))
    rec2 = run(append(store, rec, [AssistantMessage(content="a")], [entry("c1", 1, 0)],
                      audit_rows("t1", 1, ["one"])))
    stale = rec.model_copy(update={"status": "failed"})
    for expected in (rec.version, rec2.version + 5):
        change = Commit(
            thread=stale.model_copy(update={"version": expected + 1,
                                            "message_count": rec2.message_count + 1}),
            messages=[UserMessage(content="lost")],
            journal=[entry("c1", 1, 0, CallState.SUCCEEDED), entry("c9", 1, 1)],
            audit=audit_rows("t1", 2, ["lost"]),
        )
        with pytest.raises(VersionConflict):
            run(store.commit(change, expected_version=expected))
    # atomic: neither the row nor the messages, journal or audit of the refused change
    snap = run(store.load("t1"))
    assert snap is not None
    assert snap.thread == rec2
    assert [m.content for m in snap.messages] == ["hi", "a"]
    assert [(e.tool_call_id, e.state) for e in run(store.journal("t1"))] == [
        ("c1", CallState.PROPOSED)]
    assert [a.kind for a in run(store.audit(thread_id="t1"))] == ["one"]


def test_commit_to_a_missing_thread_conflicts(stores: StoreFactory) -> None:
    store = stores()
    with pytest.raises(VersionConflict):
        run(store.commit(Commit(thread=thread("ghost", 4), messages=[]), expected_version=3))
    assert run(store.load("ghost")) is None


def test_concurrent_commits_from_one_version_only_one_wins(stores: StoreFactory) -> None:
    """Writers (separate checkpointer instances, so separate connections, where the backend
    has them) race from the same version; exactly one change is stored."""
    writers = [stores() for _ in range(4)]
    rec = run(create(writers[0], "t1", [UserMessage(content="hi")]))

    async def write(store: Checkpointer, text: str) -> str:
        new = rec.model_copy(update={"version": 2, "message_count": 2, "preview": text})
        try:
            await store.commit(Commit(thread=new, messages=[AssistantMessage(content=text)]),
                               expected_version=1)
            return text
        except VersionConflict:
            return "conflict"

    async def race() -> list[str]:
        return list(await asyncio.gather(*(write(s, f"w{i}") for i, s in enumerate(writers))))

    outcomes = run(race())
    assert sorted(outcomes)[:3] == ["conflict"] * 3, outcomes
    winner = next(o for o in outcomes if o != "conflict")
    snap = run(writers[0].load("t1"))
    assert snap is not None
    assert snap.thread.preview == winner
    assert [m.content for m in snap.messages] == ["hi", winner]


# ---------------------------------------------------------------------------- messages


def test_messages_are_appended_in_order_across_commits(stores: StoreFactory) -> None:
    store = stores()
    rec = run(create(store, "t1", [CONVERSATION[0]]))
    for i in range(1, len(CONVERSATION)):
        rec = run(append(store, rec, [CONVERSATION[i]]))
    rec = run(append(store, rec, [UserMessage(content=f"m{i}") for i in range(30)]))
    snap = run(store.load("t1"))
    assert snap is not None
    assert snap.messages == [*CONVERSATION, *(UserMessage(content=f"m{i}") for i in range(30))]
    assert snap.thread.message_count == len(snap.messages)


def test_threads_do_not_see_each_others_rows(stores: StoreFactory) -> None:
    store = stores()
    a = run(create(store, "a", [UserMessage(content="for a")]))
    b = run(create(store, "b", [UserMessage(content="for b")]))
    run(append(store, a, [AssistantMessage(content="a1")], [entry("c1", 1, 0)],
               audit_rows("a", 1, ["a"]), turn=1))
    run(append(store, b, [AssistantMessage(content="b1")], [entry("c1", 1, 0, CallState.FAILED)],
               audit_rows("b", 1, ["b"]), turn=1))
    sa, sb = run(store.load("a")), run(store.load("b"))
    assert sa is not None and sb is not None
    assert [m.content for m in sa.messages] == ["for a", "a1"]
    assert sa.journal["c1"].state == CallState.PROPOSED
    assert sb.journal["c1"].state == CallState.FAILED
    assert [r.kind for r in run(store.audit(thread_id="b"))] == ["b"]


# ---------------------------------------------------------------------------- journal


def test_journal_upserts_by_call_and_load_returns_only_the_open_turn(
    stores: StoreFactory,
) -> None:
    store = stores()
    rec = run(create(store, "t1", [UserMessage(content="hi")]))
    rec = run(append(store, rec, [AssistantMessage(content="turn 1")],
                     [entry("c1", 1, 0), entry("c2", 1, 1)], turn=1))
    rec = run(append(store, rec, journal=[entry("c2", 1, 1, CallState.RUNNING, attempts=1)]))
    snap = run(store.load("t1"))
    assert snap is not None
    assert {k: e.state for k, e in snap.journal.items()} == {
        "c1": CallState.PROPOSED, "c2": CallState.RUNNING}
    done = ToolMessage(tool_call_id="c2", name="write_file", content="ok")
    rec = run(append(store, rec, journal=[
        entry("c1", 1, 0, CallState.REJECTED),
        entry("c2", 1, 1, CallState.SUCCEEDED, attempts=1, result=done)]))
    rec = run(append(store, rec, [AssistantMessage(content="turn 3")], [entry("c3", 3, 0)],
                     turn=3))
    snap = run(store.load("t1"))
    assert snap is not None
    assert list(snap.journal) == ["c3"]  # only the open turn
    every = run(store.journal("t1"))
    assert [(e.tool_call_id, e.state) for e in every] == [
        ("c1", CallState.REJECTED), ("c2", CallState.SUCCEEDED), ("c3", CallState.PROPOSED)]
    assert every[1].result == done and every[1].attempts == 1
    run(append(store, rec, turn=None))
    snap = run(store.load("t1"))
    assert snap is not None and snap.journal == {}


# ---------------------------------------------------------------------------- listing


def test_list_threads_orders_filters_and_pages(stores: StoreFactory) -> None:
    store = stores()
    statuses = ["idle", "interrupted", "completed", "interrupted", "failed", "interrupted"]
    for i, status in enumerate(statuses):
        run(create(store, f"t{i}", status=status, at=T0 + timedelta(seconds=i)))
    newest_first = [f"t{i}" for i in reversed(range(len(statuses)))]
    assert [r.thread_id for r in run(store.list_threads())] == newest_first
    assert [r.thread_id for r in run(store.list_threads(limit=2))] == newest_first[:2]
    assert [r.thread_id for r in run(store.list_threads(status="interrupted"))] == [
        "t5", "t3", "t1"]
    assert run(store.list_threads(status="running")) == []
    page = run(store.list_threads(limit=2))
    rest = run(store.list_threads(before=page[-1].updated_at))
    assert [r.thread_id for r in page + rest] == newest_first
    assert [r.thread_id for r in run(store.list_threads(
        status="interrupted", before=T0 + timedelta(seconds=3), limit=5))] == ["t1"]


def test_list_threads_follows_updates(stores: StoreFactory) -> None:
    store = stores()
    old = run(create(store, "old", at=T0))
    run(create(store, "new", at=T0 + timedelta(seconds=1)))
    run(append(store, old, status="interrupted", updated_at=T0 + timedelta(seconds=2)))
    rows = run(store.list_threads())
    assert [(r.thread_id, r.status, r.version) for r in rows] == [
        ("old", "interrupted", 2), ("new", "idle", 1)]


# ---------------------------------------------------------------------------- audit


def sub_agent_family(store: Checkpointer) -> None:
    """Top-level threads top0..top2 (top1 idle) and, under top0, a sub-agent's thread and
    its own sub-agent's, all created by alice and holding 'orders' in their preview."""
    link = ParentLink(thread_id="top0", tool_call_id="c1", tool_name="sqlbot", agent="lead")
    deeper = ParentLink(thread_id="top0@c1", tool_call_id="c2", tool_name="helper",
                        agent="sqlbot", above=link.steps())
    rows = [("top0", None), ("top0@c1", link), ("top0@c1@c2", deeper), ("top1", None),
            ("top2", None)]
    for i, (tid, parent) in enumerate(rows):
        run(create(store, tid, status="idle" if tid == "top1" else "interrupted",
                   at=T0 + timedelta(seconds=i), parent=parent, created_by="alice",
                   preview=f"orders {tid}"))


def test_list_and_count_leave_out_sub_agents_threads_with_top_level(
        stores: StoreFactory) -> None:
    store = stores()
    sub_agent_family(store)
    alice = ["user:alice"]

    def ids(**kw: Any) -> list[str]:
        return [r.thread_id for r in run(store.list_threads(**kw))]

    assert ids() == ["top2", "top1", "top0@c1@c2", "top0@c1", "top0"]
    for kw in ({}, {"readers": alice}):
        assert ids(top_level=True, **kw) == ["top2", "top1", "top0"]
        assert ids(top_level=True, status="interrupted", **kw) == ["top2", "top0"]
        assert ids(top_level=True, search="orders", **kw) == ["top2", "top1", "top0"]
        assert ids(top_level=True, search="top0", **kw) == ["top0"]
        assert ids(top_level=True, limit=1, **kw) == ["top2"]  # pages are full pages
        last = run(store.list_threads(top_level=True, limit=2, **kw))[-1]
        assert ids(top_level=True, before=last.updated_at, before_id=last.thread_id,
                   **kw) == ["top0"]
    assert run(store.count_threads()) == 5
    assert run(store.count_threads(top_level=True)) == 3
    assert run(store.count_threads(top_level=True, status="interrupted")) == 2
    assert run(store.count_threads(top_level=True, search="top0")) == 1
    assert run(store.count_threads(status="interrupted", search="top0")) == 3


def test_audit_is_in_insertion_order_and_pages_by_id(stores: StoreFactory) -> None:
    store = stores()
    a = run(create(store, "a"))
    b = run(create(store, "b"))
    a = run(append(store, a, audit=audit_rows("a", 1, ["a1", "a2"])))
    b = run(append(store, b, audit=audit_rows("b", 1, ["b1"])))
    a = run(append(store, a, audit=audit_rows("a", 3, ["a3"])))
    rows = run(store.audit())
    assert [r.kind for r in rows] == ["a1", "a2", "b1", "a3"]
    ids = [r.id for r in rows]
    assert all(isinstance(i, int) for i in ids) and ids == sorted(set(ids))  # type: ignore[type-var]
    assert rows[0].model_copy(update={"id": None}) == audit_rows("a", 1, ["a1"])[0]
    assert [r.kind for r in run(store.audit(after_id=ids[1] or 0))] == ["b1", "a3"]
    assert [r.kind for r in run(store.audit(limit=2))] == ["a1", "a2"]
    assert [r.kind for r in run(store.audit(thread_id="a"))] == ["a1", "a2", "a3"]
    assert [r.kind for r in run(store.audit(thread_id="a", after_id=ids[2] or 0))] == ["a3"]
    assert [r.kind for r in run(store.audit(thread_id="a", limit=1))] == ["a1"]


# ---------------------------------------------------------------------------- durability


def test_a_new_instance_sees_the_committed_data(stores: StoreFactory) -> None:
    if not stores.durable:
        pytest.skip("memory storage does not outlive its instance")
    store = stores()
    rec = run(create(store, "t1", [UserMessage(content="hi")]))
    run(append(store, rec, [AssistantMessage(content="there")], [entry("c1", 1, 0)],
               audit_rows("t1", 1, ["x"]), turn=1))
    run(store.close())
    again = stores()
    snap = run(again.load("t1"))
    assert snap is not None
    assert snap.thread.version == 2
    assert [m.content for m in snap.messages] == ["hi", "there"]
    assert list(snap.journal) == ["c1"]
    assert [r.kind for r in run(again.audit())] == ["x"]


@tool
def write_file(path: str) -> str:
    """Write a file."""
    return f"wrote {path}"


def test_pause_in_one_instance_resume_in_another(stores: StoreFactory) -> None:
    """End to end: pause with one checkpointer instance, approve from a fresh one (as a
    reviewer's process would), and finish with the tool run once."""
    model = ScriptedModel([{"name": "write_file", "args": {"path": "/a"}}, "done"])

    def agent() -> Agent:
        return Agent(model=model, tools=[write_file], checkpointer=stores(),
                     middleware=[HumanInTheLoop(interrupt_on={"write_file": True})])

    first = agent()
    paused = first.invoke("write /a", thread_id="e2e")
    assert paused.interrupted
    first.close()
    second = agent()
    done = second.resume("e2e", [{"type": "approve"}], interrupt_id=paused.interrupts[0].id)
    assert done.status == "completed" and done.output == "done"
    assert [m.role for m in done.messages] == ["user", "assistant", "tool", "assistant"]
    [e] = second.journal("e2e")
    assert e.state == CallState.SUCCEEDED and e.attempts == 1
    assert second.verify_audit() == []


# ---------------------------------------------------------------------------- schema


def _set_stored_version(stores: StoreFactory, store: Any, version: int) -> None:
    if stores.kind == "sqlite":
        with sqlite3.connect(stores.sqlite_path) as conn:
            conn.execute("UPDATE interlock_meta SET value=? WHERE key='schema_version'",
                         (str(version),))
    else:
        import psycopg

        with psycopg.connect(store.dsn, autocommit=True) as conn:
            conn.execute(f'UPDATE "{stores.pg_schema}".interlock_meta SET value=%s '
                         f"WHERE key='schema_version'", [str(version)])


def _newest(stores: StoreFactory) -> int:
    """The schema version this code writes for the backend."""
    from interlock.storage import postgres, sqlite

    return sqlite.SCHEMA_VERSION if stores.kind == "sqlite" else postgres.SCHEMA_VERSION


def test_schema_version_is_recorded_and_a_newer_one_refused(stores: StoreFactory) -> None:
    if not stores.durable:
        pytest.skip("memory storage has no schema")
    SCHEMA_VERSION = _newest(stores)
    store = stores()
    run(create(store, "t1"))
    assert store.schema_version() == SCHEMA_VERSION  # type: ignore[attr-defined]
    run(store.close())
    _set_stored_version(stores, store, SCHEMA_VERSION + 1)
    newer = stores()
    with pytest.raises(StorageError) as err:
        run(newer.load("t1"))
    msg = str(err.value)
    assert f"version {SCHEMA_VERSION + 1}" in msg and f"up to {SCHEMA_VERSION}" in msg
    assert "Upgrade interlock" in msg
    _set_stored_version(stores, store, SCHEMA_VERSION)
    snap = run(stores().load("t1"))
    assert snap is not None and snap.thread.version == 1


def test_first_use_by_many_instances_at_once_migrates_once(stores: StoreFactory) -> None:
    """Several processes starting against an empty database: the schema is created once and
    every instance works."""
    if not stores.durable:
        pytest.skip("memory storage has no schema")
    instances = [stores() for _ in range(6)]
    barrier = threading.Barrier(len(instances))
    errors: list[BaseException] = []

    def first_use(store: Checkpointer, i: int) -> None:
        barrier.wait()
        try:
            run(create(store, f"t{i}"))
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=first_use, args=(s, i)) for i, s in enumerate(instances)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert errors == []
    assert len(run(instances[0].list_threads())) == len(instances)
    assert all(s.schema_version() == _newest(stores)  # type: ignore[attr-defined]
               for s in instances)


# ---------------------------------------------------------------------------- outbox


def event(eid: str, tid: str = "t1", *, at: datetime = T0, **extra: Any) -> OutboxEvent:
    notice = Notice(thread_id=tid, interrupt_id="i1", thread_version=1, calls=[
        NoticeCall(tool_call_id="c1", name="write_file", args={"path": "/ü\x00"})])
    return OutboxEvent(id=eid, type="request.raised", thread_id=tid, created_at=at,
                       next_at=at, notice=notice, **extra)


def test_outbox_events_are_stored_with_their_commit_only(stores: StoreFactory) -> None:
    store = stores()
    rec = thread("t1", 1)
    run(store.commit(Commit(thread=rec, outbox=[event("e1"), event("e2")]),
                     expected_version=None))
    stale = rec.model_copy(update={"version": 2})
    with pytest.raises(VersionConflict):
        run(store.commit(Commit(thread=stale, outbox=[event("lost")]), expected_version=7))
    assert [e.id for e in run(store.outbox_list())] == ["e1", "e2"]
    got = run(store.outbox_get("e1"))
    assert got == event("e1")
    assert run(store.outbox_get("lost")) is None
    assert [e.id for e in run(stores().outbox_list(thread_id="t1"))] == ["e1", "e2"]
    assert run(store.outbox_list(thread_id="other")) == []


def test_outbox_claim_leases_due_events_oldest_first(stores: StoreFactory) -> None:
    store = stores()
    later = T0 + timedelta(minutes=10)
    run(store.commit(Commit(thread=thread("t1", 1), outbox=[
        event("late", at=later), event("b", at=T0 + timedelta(seconds=1)), event("a")]),
        expected_version=None))
    lease = T0 + timedelta(seconds=30)
    first = run(store.outbox_claim("d1", now=T0 + timedelta(seconds=5), until=lease, limit=1))
    assert [(e.id, e.lease_owner, e.lease_until) for e in first] == [("a", "d1", lease)]
    second = run(stores().outbox_claim("d2", now=T0 + timedelta(seconds=5), until=lease))
    assert [e.id for e in second] == ["b"]  # "a" is leased, "late" is not due
    # an expired lease is taken over
    third = run(store.outbox_claim("d3", now=lease + timedelta(seconds=1),
                                   until=lease + timedelta(seconds=60)))
    assert [e.id for e in third] == ["a", "b"]
    assert run(store.outbox_get("a")).lease_owner == "d3"  # type: ignore[union-attr]


def test_outbox_update_needs_the_lease_and_retry_makes_dead_events_due(
    stores: StoreFactory,
) -> None:
    store = stores()
    run(store.commit(Commit(thread=thread("t1", 1), outbox=[event("e1")]),
                     expected_version=None))
    (claimed,) = run(store.outbox_claim("d1", now=T0, until=T0 + timedelta(seconds=30)))
    dead = claimed.model_copy(update={
        "status": "dead", "lease_owner": None, "lease_until": None,
        "deliveries": {"hook": Delivery(status="dead", attempts=5, last_error="HTTP 500")}})
    assert run(store.outbox_update(dead, leased_by="someone-else")) is False
    assert run(store.outbox_get("e1")).status == "pending"  # type: ignore[union-attr]
    assert run(store.outbox_update(dead, leased_by="d1")) is True
    assert [e.id for e in run(store.outbox_list(status="dead"))] == ["e1"]
    assert run(store.outbox_get("e1")) == dead
    assert run(store.outbox_claim("d2", now=T0 + timedelta(hours=1),
                                  until=T0 + timedelta(hours=2))) == []
    retried = dead.model_copy(update={"status": "pending", "next_at": T0 + timedelta(hours=1)})
    assert run(store.outbox_update(retried, leased_by=None)) is True
    assert run(store.outbox_list(status="dead")) == []
    again = run(store.outbox_claim("d2", now=T0 + timedelta(hours=1),
                                   until=T0 + timedelta(hours=2)))
    assert [e.id for e in again] == ["e1"]
    assert again[0].deliveries == dead.deliveries


def test_outbox_prune_deletes_old_events_of_the_given_statuses(stores: StoreFactory) -> None:
    store = stores()
    old, new = T0 - timedelta(days=40), T0
    run(store.commit(Commit(thread=thread("t1", 1), outbox=[
        event("old-delivered", at=old, status="delivered"), event("old-dead", at=old,
                                                                  status="dead"),
        event("old-pending", at=old), event("new-delivered", at=new, status="delivered")]),
        expected_version=None))
    cutoff = T0 - timedelta(days=30)
    assert run(store.outbox_prune(before=cutoff)) == 1
    assert run(store.outbox_prune(before=cutoff, statuses=("delivered", "dead"))) == 1
    assert sorted(e.id for e in run(store.outbox_list())) == ["new-delivered", "old-pending"]
    assert run(store.outbox_prune(before=cutoff, statuses=())) == 0


def test_outbox_prune_keeps_what_posted_the_messages_of_a_waiting_thread(
        stores: StoreFactory) -> None:
    """The events that posted a request's messages (raised, escalated) stay while their
    thread waits: later events of the request update those messages."""
    store = stores()
    old = T0 - timedelta(days=40)
    kept = ["evt_i1_raised", "evt_i1_escalated", "evt_i1_escalated_7"]
    run(store.commit(Commit(thread=thread("t1", 1, status="interrupted"), outbox=[
        event(eid, at=old, status="delivered") for eid in [*kept, "evt_i1_approval_recorded_5"]
    ]), expected_version=None))
    run(store.commit(Commit(thread=thread("t2", 1, status="completed"), outbox=[
        event(eid, "t2", at=old, status="delivered") for eid in ["evt_i2_raised",
                                                                 "evt_i2_escalated_3"]
    ]), expected_version=None))
    assert run(store.outbox_prune(before=T0)) == 3
    assert sorted(e.id for e in run(store.outbox_list())) == sorted(kept)
    run(store.commit(Commit(thread=thread("t1", 2, status="idle")), expected_version=1))
    assert run(store.outbox_prune(before=T0)) == 3
    assert run(store.outbox_list()) == []


def test_outbox_list_by_the_start_of_the_id(stores: StoreFactory) -> None:
    """The events of one request: their ids start with ``evt_<interrupt id>_``; ``_`` and
    ``%`` in the prefix are plain characters."""
    store = stores()
    ids = ["evt_a_raised", "evt_a_decided_4", "evt_ab_raised", "evt_a%_raised", "evt_b_raised"]
    run(store.commit(Commit(thread=thread("t1", 1), outbox=[event(i) for i in ids]),
                     expected_version=None))
    assert sorted(e.id for e in run(store.outbox_list(id_prefix="evt_a_"))) == [
        "evt_a_decided_4", "evt_a_raised"]
    assert [e.id for e in run(store.outbox_list(id_prefix="evt_a%"))] == ["evt_a%_raised"]
    assert run(store.outbox_list(id_prefix="evt_a_", thread_id="t2")) == []
    assert run(store.outbox_list(id_prefix="nothing")) == []


def test_concurrent_outbox_claims_never_share_an_event(stores: StoreFactory) -> None:
    writers = [stores() for _ in range(4)]
    run(writers[0].commit(Commit(thread=thread("t1", 1), outbox=[
        event(f"e{i:02d}", at=T0 + timedelta(milliseconds=i)) for i in range(40)]),
        expected_version=None))

    async def claim_all(store: Checkpointer, owner: str) -> list[str]:
        got: list[str] = []
        while batch := await store.outbox_claim(owner, now=T0 + timedelta(seconds=1),
                                                until=T0 + timedelta(minutes=1), limit=3):
            got += [e.id for e in batch]
        return got

    async def race() -> list[list[str]]:
        return list(await asyncio.gather(*(claim_all(s, f"d{i}") for i, s in
                                           enumerate(writers))))

    claimed = [eid for got in run(race()) for eid in got]
    assert sorted(claimed) == [f"e{i:02d}" for i in range(40)]


def test_a_version_1_database_is_migrated_and_keeps_its_threads(stores: StoreFactory) -> None:
    if stores.kind != "sqlite":
        pytest.skip("the file layout of version 1 is built by hand for SQLite")
    from interlock.storage.sqlite import MIGRATIONS

    conn = sqlite3.connect(stores.sqlite_path)
    conn.executescript(MIGRATIONS[0])
    conn.execute("CREATE TABLE interlock_meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.execute("INSERT INTO interlock_meta VALUES ('schema_version', '1')")
    child = thread("old@c1", 1, parent=ParentLink(thread_id="old", tool_call_id="c1",
                                                  tool_name="sqlbot", agent="lead"))
    for rec in (thread("old", 1), child):
        conn.execute("INSERT INTO interlock_threads VALUES (?, ?, ?, ?, ?)",
                     (rec.thread_id, "idle", 1, T0.isoformat(), rec.model_dump_json()))
    conn.commit()
    conn.close()
    store = stores()
    snap = run(store.load("old"))
    assert snap is not None and snap.thread.thread_id == "old"
    # the parent column is filled from the stored rows
    assert [r.thread_id for r in run(store.list_threads(top_level=True))] == ["old"]
    assert run(store.count_threads(top_level=True)) == 1 and run(store.count_threads()) == 2
    assert store.schema_version() == _newest(stores)  # type: ignore[attr-defined]
    run(store.commit(Commit(thread=thread("new", 1), outbox=[event("e1", "new")]),
                     expected_version=None))
    assert [e.id for e in run(store.outbox_list())] == ["e1"]


# ---------------------------------------------------------------------------- Postgres only


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_postgres_migrates_threads_holding_nul_to_the_turn_column(stores: StoreFactory) -> None:
    """A version-1 database (the open turn read out of the row's JSON, which Postgres refuses
    for rows holding \\u0000) is migrated: the turn moves to a column, every thread loads."""
    import psycopg

    from interlock.storage import postgres

    s = stores.pg_schema
    rec = thread("t1", 3, status="interrupted", messages=2, turn=1, preview="nul \x00 here")
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{s}"')
        conn.execute(f'CREATE TABLE "{s}".interlock_meta (key TEXT PRIMARY KEY, '
                     f"value TEXT NOT NULL)")
        for stmt in postgres.MIGRATIONS[0]:
            assert isinstance(stmt, str)
            conn.execute(stmt.replace("{s}", f'"{s}"'))
        conn.execute(f"INSERT INTO \"{s}\".interlock_meta VALUES ('schema_version', '1')")
        child = thread("t1@c1", 1, preview="nul \x00 too", parent=ParentLink(
            thread_id="t1", tool_call_id="c1", tool_name="sqlbot", agent="lead"))
        for r in (rec, child):
            conn.execute(f'INSERT INTO "{s}".interlock_threads VALUES (%s, %s, %s, %s, %s)',
                         [r.thread_id, r.status, r.version, T0,
                          r.model_dump_json(exclude_defaults=True)])
        for e in (entry("c0", 0, 0), entry("c1", 1, 0)):
            conn.execute(f'INSERT INTO "{s}".interlock_journal VALUES (%s, %s, %s, %s, %s, %s)',
                         ["t1", e.tool_call_id, e.turn, e.position, e.state.value,
                          e.model_dump_json(exclude_defaults=True)])
        with pytest.raises(psycopg.errors.UntranslatableCharacter):  # what v1 ran into
            conn.execute(f"SELECT (data::json ->> 'turn') FROM \"{s}\".interlock_threads")
    store = stores()
    snap = run(store.load("t1"))
    assert snap is not None and snap.thread == rec and list(snap.journal) == ["c1"]
    assert store.schema_version() == postgres.SCHEMA_VERSION  # type: ignore[attr-defined]
    # the parent column is filled from the stored rows
    assert [r.thread_id for r in run(store.list_threads(top_level=True))] == ["t1"]
    assert run(store.count_threads(top_level=True)) == 1 and run(store.count_threads()) == 2


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_postgres_from_url_and_schema_with_odd_name(stores: StoreFactory) -> None:
    from interlock import PostgresCheckpointer

    schema = 'Odd "Schema"; x'
    store = from_url(stores.url())
    assert isinstance(store, PostgresCheckpointer) and store.schema == stores.pg_schema
    odd = PostgresCheckpointer(store.dsn, schema=schema)
    try:
        run(create(odd, "t1", [UserMessage(content="hi")]))
        snap = run(odd.load("t1"))
        assert snap is not None and snap.messages == [UserMessage(content="hi")]
        assert "password" not in repr(odd) and schema in repr(odd)
    finally:
        run(odd.close())
        run(store.close())
        import psycopg

        with psycopg.connect(store.dsn, autocommit=True) as conn:
            conn.execute('DROP SCHEMA IF EXISTS "Odd ""Schema""; x" CASCADE')


def test_postgres_unreachable_is_a_clear_storage_error() -> None:
    from interlock import PostgresCheckpointer

    store = PostgresCheckpointer("postgresql://nobody:secret@127.0.0.1:1/none",
                                 connect_timeout=1)
    with pytest.raises(StorageError) as err:
        run(store.load("t1"))
    msg = str(err.value)
    assert "127.0.0.1:1" in msg and "secret" not in msg and "DSN" in msg
    run(store.close())


def test_postgres_without_psycopg_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from interlock.storage.postgres import PostgresCheckpointer

    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(MissingDependency) as err:
        PostgresCheckpointer("postgresql://127.0.0.1/db")
    assert "pip install -e '.[postgres]'" in str(err.value)


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_postgres_without_create_privilege_says_what_to_grant(stores: StoreFactory) -> None:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from interlock import PostgresCheckpointer

    admin_dsn = from_url(stores.url()).dsn.split("?")[0]  # type: ignore[attr-defined]
    role = f"interlock_{stores.pg_schema}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
    try:
        info = {**conninfo_to_dict(admin_dsn), "user": role}
        info.pop("password", None)
        store = PostgresCheckpointer(make_conninfo(**info), schema=stores.pg_schema)
        with pytest.raises(StorageError) as err:
            run(store.load("t1"))
        msg = str(err.value)
        assert repr(stores.pg_schema) in msg and "CREATE" in msg and "permission denied" in msg
        run(store.close())
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(f'DROP ROLE IF EXISTS "{role}"')


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_postgres_replaces_connections_the_server_dropped(stores: StoreFactory) -> None:
    """After the server ends every pooled connection (restart, failover, idle kill), the next
    operations get fresh connections instead of failing."""
    import psycopg

    from interlock import PostgresCheckpointer

    admin_dsn = from_url(stores.url()).dsn.split("?")[0]  # type: ignore[attr-defined]
    app = f"il_{stores.pg_schema}"
    store = PostgresCheckpointer(f"{admin_dsn}?application_name={app}", schema=stores.pg_schema,
                                 min_size=2, max_size=2)

    async def both() -> list[Any]:
        return list(await asyncio.gather(store.load("a"), store.load("b")))

    try:
        rec = run(create(store, "a", [UserMessage(content="hi")]))
        assert [s is not None for s in run(both())] == [True, False]
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            [(ended,)] = conn.execute("SELECT count(pg_terminate_backend(pid)) FROM "
                                      "pg_stat_activity WHERE application_name = %s",
                                      [app]).fetchall()
        assert ended >= 1
        assert [s is not None for s in run(both())] == [True, False]
        run(append(store, rec, [AssistantMessage(content="still here")]))
        snap = run(store.load("a"))
        assert snap is not None and snap.messages[-1].content == "still here"
    finally:
        run(store.close())


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_postgres_repeats_a_read_whose_connection_died_unnoticed(
    stores: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server ends the connections just before they are used, too late for the pool's
    check to see it (forced here: the socket poll reports nothing). Reads are repeated once on a
    fresh connection; a write is not repeated (it may have reached the server) and says so."""
    import time

    import psycopg

    from interlock import PostgresCheckpointer
    from interlock.storage import postgres

    admin_dsn = from_url(stores.url()).dsn.split("?")[0]  # type: ignore[attr-defined]
    app = f"il_{stores.pg_schema}"
    store = PostgresCheckpointer(f"{admin_dsn}?application_name={app}", schema=stores.pg_schema,
                                 min_size=1, max_size=1)

    def end_connections() -> None:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            query = "FROM pg_stat_activity WHERE application_name = %s"
            conn.execute(f"SELECT pg_terminate_backend(pid) {query}", [app])
            deadline = time.monotonic() + 10
            while conn.execute(f"SELECT count(*) {query}", [app]).fetchone() != (0,):
                assert time.monotonic() < deadline, "the server did not end the connections"
                time.sleep(0.01)

    try:
        rec = run(create(store, "a", [UserMessage(content="hi")]))
        rec = run(append(store, rec, journal=[entry("c1", 1, 0)],
                         audit=audit_rows("a", 1, ["request_raised", "decision"]), turn=1))
        monkeypatch.setattr(postgres, "_readable", lambda conn: False)

        async def loaded() -> list[str]:
            snap = await store.load("a")
            return [] if snap is None else [str(m.content) for m in snap.messages]

        async def listed() -> list[str]:
            return [t.thread_id for t in await store.list_threads()]

        async def journal() -> list[str]:
            return [e.tool_call_id for e in await store.journal("a")]

        async def audited() -> list[str]:
            return [r.kind for r in await store.audit(thread_id="a")]

        expected = (["hi"], ["a"], ["c1"], ["request_raised", "decision"])
        assert (run(loaded()), run(listed()), run(journal()), run(audited())) == expected
        for read, want in zip((loaded, listed, journal, audited), expected, strict=True):
            end_connections()
            assert run(read()) == want  # type: ignore[operator]
        end_connections()
        with pytest.raises(StorageError, match="may or may not be stored"):
            run(append(store, rec, [AssistantMessage(content="lost?")]))
        snap = run(store.load("a"))
        assert snap is not None and [m.content for m in snap.messages] == ["hi"]
    finally:
        run(store.close())


@pytest.mark.parametrize("kwargs", [{"schema": ""}, {"schema": "s" * 64},
                                    {"min_size": 5, "max_size": 2}, {"max_size": 0}])
def test_postgres_settings_are_checked_when_created(kwargs: dict[str, Any]) -> None:
    from interlock import ConfigurationError, PostgresCheckpointer

    with pytest.raises(ConfigurationError):
        PostgresCheckpointer("postgresql://127.0.0.1/db", **kwargs)
