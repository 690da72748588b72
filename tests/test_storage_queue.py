"""Conformance of the storage Protocol's optional capabilities: the run queue (``RunQueue``)
of separate worker processes and the change signals (``ChangeSignals``) that wake other
processes. Every backend runs this file: one that declares a capability must pass its tests;
one that does not must refuse a commit that asks to queue a run. (Postgres has both.)"""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from interlock import ConfigurationError
from interlock.storage.base import (
    CHANGE_SIGNALS,
    RUN_QUEUE,
    ChangeSignals,
    Commit,
    RunQueue,
    capabilities,
)
from test_storage_conformance import T0, run, thread

if TYPE_CHECKING:
    from conftest import StoreFactory

DECLARED = {"memory": frozenset(), "sqlite": frozenset(),
            "postgres": frozenset({RUN_QUEUE, CHANGE_SIGNALS})}


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
