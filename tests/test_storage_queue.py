"""Conformance of the storage Protocol's optional capabilities: the run queue (``RunQueue``)
of separate worker processes, the change signals (``ChangeSignals``) that wake other
processes and the recovery sweep's index (``SweepIndex``). Every backend runs this file: one
that declares a capability must pass its tests; one that does not must refuse a commit that
asks to queue a run. (Postgres has all three, SQLite the sweep index.)"""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from interlock import ConfigurationError
from interlock.storage.base import (
    CHANGE_SIGNALS,
    EVENT_RELAY,
    RUN_QUEUE,
    SWEEP_INDEX,
    ChangeSignals,
    Commit,
    EventRelay,
    RunQueue,
    SweepIndex,
    capabilities,
    needs_sweep,
)
from test_storage_conformance import T0, run, thread

if TYPE_CHECKING:
    from conftest import StoreFactory

DECLARED = {"memory": frozenset(), "sqlite": frozenset({SWEEP_INDEX}),
            "postgres": frozenset({RUN_QUEUE, CHANGE_SIGNALS, SWEEP_INDEX, EVENT_RELAY})}


def queue_of(stores: StoreFactory) -> RunQueue:
    store = stores()
    if RUN_QUEUE not in capabilities(store):
        pytest.skip(f"{stores.kind} has no run queue (optional capability)")
    assert isinstance(store, RunQueue)
    return store


def signals_of(stores: StoreFactory) -> ChangeSignals:
    store = stores()
    if CHANGE_SIGNALS not in capabilities(store):
        pytest.skip(f"{stores.kind} sends no change signals (optional capability)")
    assert isinstance(store, ChangeSignals)
    return store


async def queued(store: Any, tid: str, version: int, *, at: timedelta = timedelta(0),
                 expected: int | None = -1) -> None:
    """Commit version ``version`` of ``tid`` with its run queued."""
    await store.commit(Commit(thread=thread(tid, version, status="running", at=T0 + at),
                              enqueue=True),
                       expected_version=(None if version == 1 else version - 1)
                       if expected == -1 else expected)


def test_backends_declare_their_capabilities(stores: StoreFactory) -> None:
    assert capabilities(stores()) == DECLARED[stores.kind]


def test_a_store_without_a_run_queue_refuses_to_queue_a_run(stores: StoreFactory) -> None:
    store = stores()
    if RUN_QUEUE in capabilities(store):
        pytest.skip(f"{stores.kind} has a run queue")
    with pytest.raises(ConfigurationError, match="no run queue"):
        run(store.commit(Commit(thread=thread("t1", 1), enqueue=True), expected_version=None))
    assert run(store.load("t1")) is None  # nothing stored either


def test_queuing_is_part_of_the_commit(stores: StoreFactory) -> None:
    q = queue_of(stores)
    run(queued(q, "t1", 1))
    with pytest.raises(Exception, match="changed concurrently"):
        run(queued(q, "t2", 2, expected=5))  # no such thread: neither stored nor queued
    run(q.commit(Commit(thread=thread("t3", 1)), expected_version=None))  # not queued
    entries = run(q.queue_list())
    assert [e.thread_id for e in entries] == ["t1"]
    assert entries[0].attempts == 0 and entries[0].lease_owner is None


def test_claims_take_the_oldest_free_entries_and_never_overlap(stores: StoreFactory) -> None:
    q = queue_of(stores)

    async def setup() -> None:
        for i in range(4):
            await queued(q, f"t{i}", 1, at=timedelta(seconds=i))

    run(setup())
    until = T0 + timedelta(seconds=30)
    first = run(q.queue_claim("w1", now=T0, until=until, limit=2))
    assert [(e.thread_id, e.attempts, e.lease_owner) for e in first] == [
        ("t0", 1, "w1"), ("t1", 1, "w1")]
    second = run(q.queue_claim("w2", now=T0, until=until, limit=5))
    assert [e.thread_id for e in second] == ["t2", "t3"]
    assert run(q.queue_claim("w3", now=T0 + timedelta(seconds=29), until=until)) == []
    # w1 renews one claim; once the others ran out they can be claimed again
    assert run(q.queue_extend("w1", ["t0", "t2"], until=T0 + timedelta(minutes=5))) == ["t0"]
    later = run(q.queue_claim("w3", now=T0 + timedelta(seconds=31),
                              until=T0 + timedelta(minutes=1), limit=10))
    assert [(e.thread_id, e.attempts) for e in later] == [("t1", 2), ("t2", 2), ("t3", 2)]


def test_done_and_release_need_the_claim_and_the_ticket(stores: StoreFactory) -> None:
    q = queue_of(stores)
    run(queued(q, "t1", 1))
    until = T0 + timedelta(seconds=30)
    [claim] = run(q.queue_claim("w1", now=T0, until=until))
    assert not run(q.queue_done(claim, "w2"))  # not w2's claim
    # queued again (the run paused, a reviewer decided): a new ticket, the claim dropped
    run(queued(q, "t1", 2))
    [entry] = run(q.queue_list())
    assert entry.ticket != claim.ticket and entry.lease_owner is None
    assert not run(q.queue_done(claim, "w1"))  # the older ticket removes nothing
    assert run(q.queue_extend("w1", ["t1"], until=until)) == []
    [again] = run(q.queue_claim("w2", now=T0, until=until))
    assert again.ticket == entry.ticket and again.attempts == 1
    # given back for later: not claimable before then
    assert run(q.queue_release(again, "w2", at=T0 + timedelta(seconds=10)))
    assert run(q.queue_claim("w3", now=T0 + timedelta(seconds=5), until=until)) == []
    [third] = run(q.queue_claim("w3", now=T0 + timedelta(seconds=11), until=until))
    assert run(q.queue_done(third, "w3"))
    assert run(q.queue_list()) == []


def test_concurrent_claims_never_share_an_entry(stores: StoreFactory) -> None:
    q = queue_of(stores)

    async def setup() -> None:
        for i in range(40):
            await queued(q, f"t{i:02d}", 1, at=timedelta(milliseconds=i))

    run(setup())
    workers = [stores() for _ in range(4)]

    async def claim_all(store: Any, owner: str) -> list[str]:
        got: list[str] = []
        while batch := await store.queue_claim(owner, now=T0,
                                               until=T0 + timedelta(minutes=1), limit=3):
            got += [e.thread_id for e in batch]
        return got

    async def race() -> list[list[str]]:
        return list(await asyncio.gather(*(claim_all(s, f"w{i}")
                                           for i, s in enumerate(workers))))

    claimed = [tid for got in run(race()) for tid in got]
    assert sorted(claimed) == [f"t{i:02d}" for i in range(40)]


def test_commits_of_another_instance_send_signals(stores: StoreFactory) -> None:
    listener = signals_of(stores)
    writer = stores()
    got: dict[str, threading.Event] = {"changes": threading.Event(),
                                       "queue": threading.Event()}
    stop_changes = listener.on_signal("changes", got["changes"].set)
    stop_queue = listener.on_signal("queue", got["queue"].set)
    run(writer.commit(Commit(thread=thread("t1", 1)), expected_version=None))
    assert got["changes"].wait(5)
    assert not got["queue"].wait(0.3)  # nothing was queued
    got["changes"].clear()
    run(queued(writer, "t1", 2))
    assert got["queue"].wait(5) and got["changes"].wait(5)
    stop_changes()
    stop_queue()
    got["changes"].clear()
    run(writer.commit(Commit(thread=thread("t1", 3)), expected_version=2))
    assert not got["changes"].wait(0.5)  # stopped


def test_the_sweep_index_holds_exactly_the_marked_threads_and_pages(
        stores: StoreFactory) -> None:
    """``sweep_candidates``: the threads ``needs_sweep`` marks (running; failed with an open
    turn or with tool results the model has not seen), by thread id, ``limit`` at a time from
    ``after``, following every commit."""
    store = stores()
    if SWEEP_INDEX not in capabilities(store):
        pytest.skip(f"{stores.kind} has no sweep index (optional capability)")
    assert isinstance(store, SweepIndex)
    kinds: dict[str, dict[str, Any]] = {
        "a-running": {"status": "running"},
        "b-failed-open-turn": {"status": "failed", "turn": 1},
        "c-failed-unseen": {"status": "failed", "results_unseen": True},
        "d-failed-nothing-left": {"status": "failed"},
        "e-completed": {"status": "completed"},
        "f-interrupted": {"status": "interrupted", "turn": 1},
        "g-idle": {},
    }
    for tid, fields in kinds.items():
        run(store.commit(Commit(thread=thread(tid, 1, **fields)), expected_version=None))
    marked = ["a-running", "b-failed-open-turn", "c-failed-unseen"]
    assert marked == sorted(t for t, f in kinds.items() if needs_sweep(thread(t, 1, **f)))
    assert [t.thread_id for t in run(store.sweep_candidates())] == marked
    first = run(store.sweep_candidates(limit=2))
    rest = run(store.sweep_candidates(limit=2, after=first[-1].thread_id))
    assert [t.thread_id for t in first + rest] == marked
    # the run ends: the thread leaves the index; a failure with work left puts it back
    run(store.commit(Commit(thread=thread("a-running", 2, status="completed")),
                     expected_version=1))
    run(store.commit(Commit(thread=thread("e-completed", 2, status="failed", turn=3)),
                     expected_version=1))
    assert [t.thread_id for t in run(store.sweep_candidates())] == [
        "b-failed-open-turn", "c-failed-unseen", "e-completed"]


def test_relayed_events_reach_every_listener_and_large_ones_are_cut(
        stores: StoreFactory) -> None:
    """``EventRelay``: an event one process relays reaches the callbacks of another (a
    worker's run events, streamed by an API server); one over the payload limit arrives with
    its names and ids but without its arguments and content, marked ``cut``."""
    import queue as queues

    sender, listener = stores(), stores()
    if EVENT_RELAY not in capabilities(sender):
        pytest.skip(f"{stores.kind} relays no events (optional capability)")
    assert isinstance(sender, EventRelay) and isinstance(listener, EventRelay)
    got: queues.Queue[tuple[str, dict[str, Any]]] = queues.Queue()
    stop = listener.on_relayed_event(lambda tid, ev: got.put((tid, ev)))
    try:
        small = {"type": "tool_started", "thread_id": "t1",
                 "call": {"id": "c1", "name": "execute_sql", "args": {"query": "SELECT ü"}}}
        run(sender.relay_event("t1", small))
        assert got.get(timeout=10) == ("t1", small)
        big = {"type": "tool_finished", "thread_id": "t1", "result": {
            "tool_call_id": "c1", "name": "execute_sql", "content": "y" * 20_000,
            "status": "success"}}
        run(sender.relay_event("t1", big))
        assert got.get(timeout=10) == ("t1", {
            "type": "tool_finished", "thread_id": "t1", "cut": True, "result": {
                "tool_call_id": "c1", "name": "execute_sql", "status": "success"}})
    finally:
        stop()
