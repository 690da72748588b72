"""A cancellation that arrives while a write is under way is never lost, even when that write
fails.

A write under way is seen to its end when the run is cancelled meanwhile (it may land). When it
then fails, its error goes up first (the handlers of a failed write run) and the cancellation
reaches the task after: the call ends cancelled, a ``wait_for`` times out with
``TimeoutError``, a recovery sweep stops at once, and a worker told to stop returns. Before,
the write's ``StorageError`` took the cancellation's place: a sweep that logs such errors and
goes on kept a stopping worker alive for good (a CI run found a worker still running 60 s
after its SIGTERM).

Every state keeps a mover: the thread whose write failed is left for recovery, which runs it
once when the store works again. And a known outcome outranks a prompt stop: while this process
keeps a tool's result that the store did not take, the store's error goes up instead, so that a
worker holding its claim tries again and stores it before it exits.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import StoreFactory, require_postgres
from interlock import (
    Agent,
    CallState,
    HumanInTheLoop,
    ScriptedModel,
    StorageError,
    ToolMessage,
    UserMessage,
    tool,
)
from interlock.worker import Worker

RAN: Counter[str] = Counter()


@tool
def delete_rows(table: str) -> str:
    """Delete every row of a table."""
    RAN[table] += 1
    return f"deleted {table}"


def script(messages: Any) -> Any:
    if any(isinstance(m, ToolMessage) for m in messages):
        return "done"
    user = next(m for m in messages if isinstance(m, UserMessage))
    return {"name": "delete_rows", "args": {"table": user.content}}


class FailingWrites:
    """Wraps a store. ``mode``: ``None`` passes every commit; ``"running"`` fails at once the
    commits that write a ``running`` call (nothing stored); ``"slow"`` makes every commit wait
    ``delay`` seconds (a write under way) and then fail, nothing stored; ``"result"`` does that
    to the first commit of a tool's result, fails the next ``down`` commits at once, and then
    passes every commit again; ``"running lands"`` stores the first commit of a ``running`` call, then
    waits and reports it failed (the answer lost), fails the next ``down - 1`` commits at once,
    and passes every commit after."""

    durable = True

    def __init__(self, inner: Any, delay: float = 0.2) -> None:
        self.inner = inner
        self.mode: str | None = None
        self.delay = delay
        self.failed_writes: list[str] = []
        self.slow_failure = False
        self.writing: asyncio.Event | None = None
        self.down = 1

    async def commit(self, change: Any, *, expected_version: int | None) -> None:
        if self.mode == "running" and any(e.state == CallState.RUNNING
                                          for e in change.journal):
            raise StorageError("injected: the connection broke before the write was sent")
        if self.mode == "result" and any(e.state == CallState.SUCCEEDED
                                         for e in change.journal):
            self.mode = "after result"
            self.slow_failure = True
        elif self.mode in ("after result", "after running"):
            # the run's failure, stored with the result staged in it, fails too (and the
            # writes of the next ``down - 1`` tries); then writes work again
            self.down -= 1
            if self.down <= 0:
                self.mode = None
            self.failed_writes.append(change.thread.thread_id)
            raise StorageError("injected: the connection broke again")
        if self.mode == "running lands" and any(e.state == CallState.RUNNING
                                                for e in change.journal):
            # once; then the next ``down - 1`` commits fail at once
            self.mode = "after running" if self.down > 1 else None
            self.down -= 1
            await self.inner.commit(change, expected_version=expected_version)
            self.failed_writes.append(change.thread.thread_id)
            if self.writing is not None:
                self.writing.set()
            await asyncio.sleep(self.delay)
            raise StorageError("injected: the answer to this write was lost")
        if self.mode == "slow" or self.slow_failure:
            self.slow_failure = False
            self.failed_writes.append(change.thread.thread_id)
            if self.writing is not None:
                self.writing.set()
            await asyncio.sleep(self.delay)
            raise StorageError("injected: the connection broke during the write")
        await self.inner.commit(change, expected_version=expected_version)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def pg_writes(tmp_path: Path) -> Iterator[FailingWrites]:
    """A Postgres store of this test's own, behind :class:`FailingWrites`."""
    require_postgres()
    RAN.clear()
    pg = StoreFactory("postgres", tmp_path)
    try:
        yield FailingWrites(pg(), delay=0.3)
    finally:
        pg.cleanup()


def make_agent(store: Any) -> Agent:
    return Agent(model=ScriptedModel(script), tools=[delete_rows], checkpointer=store,
                 middleware=[HumanInTheLoop({"delete_rows": True})],
                 lease=timedelta(seconds=30))


async def stale_threads(agent: Agent, store: FailingWrites, names: list[str]) -> None:
    """Threads whose approved call was never started: the write of ``running`` failed, so
    each run failed with work left (a recovery sweep's candidates)."""
    for name in names:
        paused = await agent.ainvoke(name, thread_id=name)
        assert paused.status == "interrupted"
        store.mode = "running"
        with pytest.raises(StorageError):
            await agent.aresume(name, [{"type": "approve"}], interrupt_id=paused.interrupts[0].id)
        store.mode = None
        assert (await agent.aget_thread(name)).status == "failed"


async def recover_all(agent: Agent, store: FailingWrites, names: list[str]) -> None:
    """The store works again: recovery runs every approved call exactly once."""
    store.mode = None
    await agent.arecover_stale()
    for name in names:
        assert (await agent.aget_thread(name)).status == "completed", name
    assert {n: RAN[n] for n in names} == dict.fromkeys(names, 1)


async def resume_cancelled_mid_write(agent: Agent, store: FailingWrites, table: str,
                                     mode: str) -> asyncio.Task[Any]:
    """Thread ``t`` pauses for ``table``; its approving resume is cancelled while a write made
    to fail by ``mode`` is under way. Returns the resume's task."""
    store.writing = asyncio.Event()
    paused = await agent.ainvoke(table, thread_id="t")
    store.mode = mode
    task = asyncio.ensure_future(agent.aresume(
        "t", [{"type": "approve"}], interrupt_id=paused.interrupts[0].id))
    await store.writing.wait()
    task.cancel()
    return task


@pytest.mark.parametrize("how", ["cancel", "wait_for"])
def test_a_resume_cancelled_while_its_write_fails_ends_cancelled(
        stores: StoreFactory, how: str) -> None:
    RAN.clear()
    store = FailingWrites(stores())
    agent = make_agent(store)

    async def main() -> None:
        if how == "cancel":
            task = await resume_cancelled_mid_write(agent, store, "carts", "slow")
            with pytest.raises(asyncio.CancelledError):
                await task
            assert task.cancelled()  # not ended by the write's StorageError
        else:
            paused = await agent.ainvoke("carts", thread_id="t")
            # the timeout lands while the write is under way: the resume reaches its write
            # well within the timeout even on a loaded machine, and the write takes longer
            store.mode, store.delay = "slow", 2.0
            with pytest.raises(TimeoutError):  # not the write's StorageError
                await asyncio.wait_for(agent.aresume(
                    "t", [{"type": "approve"}], interrupt_id=paused.interrupts[0].id),
                    timeout=0.5)
        assert store.failed_writes and RAN["carts"] == 0
        # nothing was stored: the call is still approved, and recovery (or the reviewer's
        # decision again) runs it once
        store.mode = None
        state = await agent.aget_thread("t")
        if state.status == "interrupted":
            await agent.aresume("t", [{"type": "approve"}], interrupt_id=state.interrupts[0].id)
        else:
            await agent.arecover("t")
        assert (await agent.aget_thread("t")).status == "completed"
        assert RAN["carts"] == 1

    asyncio.run(main())


def test_a_recovery_sweep_cancelled_while_a_write_fails_stops_at_once(
        stores: StoreFactory) -> None:
    RAN.clear()
    store = FailingWrites(stores())
    agent = make_agent(store)
    names = ["a", "b", "c"]

    async def main() -> None:
        await stale_threads(agent, store, names)
        store.writing = asyncio.Event()
        store.mode = "slow"
        sweep = asyncio.ensure_future(agent.arecover_stale())
        await store.writing.wait()
        sweep.cancel()
        with pytest.raises(asyncio.CancelledError):
            await sweep
        # the sweep stopped in the first thread's write: the others were not tried
        assert len(set(store.failed_writes)) == 1, store.failed_writes
        assert sum(RAN.values()) == 0
        await recover_all(agent, store, names)

    asyncio.run(main())


@pytest.mark.postgres
def test_a_worker_stopped_while_its_sweep_write_fails_returns(pg_writes: FailingWrites) -> None:
    """The sweep runs every 50 ms; the stop comes while its write is under way and then fails.
    The worker returns within its grace, and the thread is recovered later."""
    store = pg_writes
    agent = make_agent(store)
    worker = Worker(agent, poll_interval=0.05, recovery_interval=timedelta(seconds=0.05),
                    expiry_interval=None, shutdown_grace=1.0)

    async def main() -> float:
        await stale_threads(agent, store, ["w"])
        store.writing = asyncio.Event()
        store.mode = "slow"
        stop = asyncio.Event()
        running = asyncio.ensure_future(worker.run(stop))
        await asyncio.wait_for(store.writing.wait(), 10)
        stop.set()
        t0 = time.monotonic()
        done, _ = await asyncio.wait({running}, timeout=15)
        took = time.monotonic() - t0
        if not done:  # report it, then let the test end
            running.cancel()
            await asyncio.wait({running})
        assert done, "the worker did not return after its stop"
        running.result()
        await recover_all(agent, store, ["w"])
        return took

    assert asyncio.run(main()) < 5.0


@pytest.mark.postgres
def test_a_worker_stops_even_when_a_sweep_turns_its_stop_into_an_error(
        pg_writes: FailingWrites) -> None:
    """Whatever a sweep calls may take a cancellation in and raise something else (a driver,
    a user's hook): the worker's background loop stops all the same, instead of logging the
    error and sweeping again."""
    agent = make_agent(pg_writes)
    sweeps: list[str] = []
    started = asyncio.Event()

    async def sweep_that_swallows() -> list[Any]:
        sweeps.append("started")
        started.set()
        if "cancelled" in sweeps:
            return []  # once is enough (the test then ends either way)
        try:
            # long enough that the stop always finds this sweep under way (a 0.3 s sweep could
            # end, and the next begin, before a busy machine let the test set the stop)
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            sweeps.append("cancelled")
            raise StorageError("injected: the stop became an error") from None
        return []

    agent.arecover_stale = sweep_that_swallows  # type: ignore[method-assign]
    worker = Worker(agent, poll_interval=0.05, recovery_interval=timedelta(seconds=0.05),
                    expiry_interval=None, shutdown_grace=1.0)

    async def main() -> None:
        stop = asyncio.Event()
        running = asyncio.ensure_future(worker.run(stop))
        await asyncio.wait_for(started.wait(), 10)
        stop.set()
        done, _ = await asyncio.wait({running}, timeout=10)
        if not done:
            running.cancel()
            await asyncio.wait({running})
        assert done, f"the worker did not return after its stop ({len(sweeps)} sweeps)"
        running.result()
        assert sweeps == ["started", "cancelled"]  # no sweep after the stop

    asyncio.run(main())


def test_a_known_result_outranks_a_prompt_stop(stores: StoreFactory) -> None:
    """Invariant 2: the tool ran and its result write fails while the run is cancelled. The
    store's error goes up (not the cancellation), so that whoever tries again in this
    process stores the real result; the call is never declared "outcome unknown"."""
    RAN.clear()
    store = FailingWrites(stores())
    agent = make_agent(store)

    async def main() -> None:
        task = await resume_cancelled_mid_write(agent, store, "orders", "result")
        with pytest.raises(StorageError):
            await task
        assert RAN["orders"] == 1
        done = await agent.arecover("t")
        assert done.status == "completed"
        entry = next(iter(await agent.ajournal("t")))
        assert entry.state == CallState.SUCCEEDED
        assert entry.result is not None and entry.result.content == "deleted orders"
        assert RAN["orders"] == 1

    asyncio.run(main())


async def worker_stopped_mid_write(store: FailingWrites, table: str, thread_id: str,
                                   mode: str, *, down: int = 1, bound: float = 15) -> None:
    """Thread ``thread_id`` asks to delete ``table``; the approval hands it to a worker (no
    shutdown grace), which is stopped while a write made to fail by ``mode`` is under way.
    Returns once the worker did, within ``bound`` seconds; the tool ran once."""
    agent = make_agent(store)
    worker = Worker(agent, poll_interval=0.05, recovery_interval=None,
                    expiry_interval=None, shutdown_grace=0.0)
    store.writing = asyncio.Event()
    paused = await agent.ainvoke(table, thread_id=thread_id)
    queued = await agent.aresume(thread_id, [{"type": "approve"}],
                                 interrupt_id=paused.interrupts[0].id, handoff=True)
    assert queued.status == "queued"
    store.down = down
    store.mode = mode
    stop = asyncio.Event()
    running = asyncio.ensure_future(worker.run(stop))
    await asyncio.wait_for(store.writing.wait(), 10)
    stop.set()
    done, _ = await asyncio.wait({running}, timeout=bound)
    assert done, "the worker did not return after its stop"
    running.result()
    assert RAN[table] == 1


async def settled(store: FailingWrites, table: str, thread_id: str) -> None:
    """What the store holds, read as another process would: the call succeeded with its
    real result, the run completed, and nobody was asked "outcome unknown"."""
    entry = next(iter(await store.inner.journal(thread_id)))
    assert entry.state == CallState.SUCCEEDED, entry.state
    assert entry.result is not None and entry.result.content == f"deleted {table}"
    snap = await store.inner.load(thread_id)
    assert snap is not None and snap.thread.status == "completed"
    assert not [r for r in await store.inner.audit(thread_id=thread_id) if r.kind == "outcome_unknown"]


@pytest.mark.postgres
@pytest.mark.parametrize("mode", ["result", "running lands"])
def test_a_stopping_worker_settles_what_only_it_knows_before_it_returns(
        pg_writes: FailingWrites, mode: str) -> None:
    """The worker is stopped with no grace while a write fails that leaves knowledge only in
    this process: a tool's result the store did not take (``result``), or a ``running`` entry
    that landed although the write reported failure, so the tool never started (``running
    lands``). The worker settles it on its next try before it returns: the tool runs once,
    its real result is stored, and nothing is "outcome unknown"."""

    async def main() -> None:
        await worker_stopped_mid_write(pg_writes, "users", "u", mode)
        await settled(pg_writes, "users", "u")

    asyncio.run(main())


async def kept_past_retries(store: FailingWrites, table: str, thread_id: str,
                            mode: str) -> None:
    """:func:`worker_stopped_mid_write` with every try failing at least once (twice as many
    failed writes as the worker's retries); then what the store holds is :func:`settled`."""
    from interlock import worker as worker_module

    await worker_stopped_mid_write(store, table, thread_id, mode,
                                   down=2 * worker_module.STORE_RETRIES + 1, bound=30)
    assert store.mode is None, "the store's outage did not run its course"
    assert len(store.failed_writes) >= worker_module.STORE_RETRIES + 1
    await settled(store, table, thread_id)


@pytest.mark.postgres
def test_a_stopping_worker_keeps_trying_a_result_it_holds_past_its_store_retries(
        pg_writes: FailingWrites) -> None:
    """Invariant 2 when the store stays down longer than the worker's ordinary retries: the
    tool ran, and the writes fail for more tries than ``STORE_RETRIES`` while the worker is
    stopped with no grace. The result lives only in this process (Postgres has no spill
    directory), so the worker holds its claim and tries until the store takes the result,
    then returns. Before, it gave the entry back after ``STORE_RETRIES`` tries and returned,
    and the call was left ``running`` for another process to ask as "outcome unknown"."""
    asyncio.run(kept_past_retries(pg_writes, "invoices", "v", "result"))


@pytest.mark.postgres
def test_a_stopping_worker_keeps_trying_a_call_it_never_started_past_its_store_retries(
        pg_writes: FailingWrites) -> None:
    """Invariant 2 for the other thing only this process knows: the ``running`` write of the
    call landed although it reported failure, so this process knows the tool never started;
    then the writes fail for more tries than ``STORE_RETRIES`` while the worker is stopped
    with no grace. The worker holds its claim and tries until the store takes the call back,
    runs the tool once and returns. Before, it gave the entry back after ``STORE_RETRIES``
    tries and returned, and the next process found the call ``running`` under a process that
    was gone and asked its outcome as unknown (seen in the API and worker tier's model test,
    with connections cut and a worker stopped by SIGTERM)."""
    asyncio.run(kept_past_retries(pg_writes, "orders", "o", "running lands"))


@pytest.mark.postgres
def test_a_worker_whose_store_stays_down_still_ends_within_its_stop_bound(
        tmp_path: Path) -> None:
    """The other side of the test above: the store stays down past the stop's bound
    (``tool_grace`` plus the grace or 5 s). The process still ends within it, rather than
    trying for ``UNSTORED_RETRY_SECONDS``: ``asyncio.run`` cancels what is left, and the run
    holding the result gives up then. The result is lost with the process (Postgres keeps no
    spill file), so the call is asked as "outcome unknown" by the next process; it is never
    run again."""
    require_postgres()
    RAN.clear()
    pg = StoreFactory("postgres", tmp_path)
    store = FailingWrites(pg(), delay=0.3)
    grace = timedelta(seconds=0.5)
    agent = Agent(model=ScriptedModel(script), tools=[delete_rows], checkpointer=store,
                  middleware=[HumanInTheLoop({"delete_rows": True})],
                  lease=timedelta(seconds=1), tool_grace=grace)
    worker = Worker(agent, poll_interval=0.05, recovery_interval=None, expiry_interval=None,
                    shutdown_grace=0.0)
    bound = grace.total_seconds() + 5.0

    async def main() -> None:
        store.writing = asyncio.Event()
        paused = await agent.ainvoke("ledgers", thread_id="l")
        await agent.aresume("l", [{"type": "approve"}], interrupt_id=paused.interrupts[0].id,
                            handoff=True)
        store.down, store.mode = 10**6, "result"  # down for good
        stop = asyncio.Event()
        running = asyncio.ensure_future(worker.run(stop))
        await asyncio.wait_for(store.writing.wait(), 10)
        stop.set()
        await asyncio.wait_for(running, bound + 10)

    try:
        t0 = time.monotonic()
        asyncio.run(main())  # returns once every task left was cancelled and ended
        took = time.monotonic() - t0
        assert took < bound + 5, f"the worker's process would have taken {took:.1f} s to end"
        assert RAN["ledgers"] == 1
        # the store is back; another process (another store object) takes the thread over
        # once the lease ran out: the call is asked about, never run again
        store.mode = None
        time.sleep(1.2)
        other = Agent(model=ScriptedModel(script), tools=[delete_rows], checkpointer=pg(),
                      middleware=[HumanInTheLoop({"delete_rows": True})],
                      lease=timedelta(seconds=1))
        state = asyncio.run(other.arecover("l"))
        assert state.status == "interrupted", state.status
        [intr] = state.interrupts
        [action] = intr.value.action_requests
        assert (action.name, action.reason) == ("delete_rows", "outcome_unknown")
        assert RAN["ledgers"] == 1
    finally:
        pg.cleanup()
