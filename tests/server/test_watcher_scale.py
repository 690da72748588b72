"""The store watcher's work follows what changed, not how many threads wait: it starts without
reading the pending threads, reads a burst of changes once, and idles on an empty read."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from conftest import StoreFactory
from interlock import (
    Agent,
    Checkpointer,
    HumanInTheLoop,
    Interrupt,
    InterruptOn,
    Reviewer,
    ScriptedModel,
    ThreadRecord,
    tool,
)
from interlock.server.hub import INBOX, Hub, StreamEvent
from interlock.server.watcher import InboxWatcher
from interlock.storage.base import ChangeCursor, ChangePage, Commit

T0 = datetime.now(UTC)


class CountingStore:
    """A real checkpointer, with a count of the rows each of its reads returned."""

    def __init__(self, inner: Checkpointer) -> None:
        self.inner = inner
        self.rows_read = 0
        self.listings = 0

    async def changes(self, *, after: ChangeCursor | None, limit: int = 500) -> ChangePage:
        page = await self.inner.changes(after=after, limit=limit)
        self.rows_read += len(page.threads)
        return page

    async def list_threads(self, **kw: Any) -> list[ThreadRecord]:
        self.listings += 1
        return await self.inner.list_threads(**kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def paused(tid: str, *, at: datetime = T0) -> ThreadRecord:
    intr = Interrupt(id=f"i-{tid}", kind="review", created_at=at,
                     value={"action_requests": [], "review_configs": []})
    return ThreadRecord(thread_id=tid, status="interrupted", version=1, created_at=at,
                        updated_at=at, pending=[intr])


async def burst(store: Checkpointer, n: int, prefix: str, *, at: datetime | None = None
                ) -> None:
    at = at or datetime.now(UTC)
    for i in range(n):
        await store.commit(Commit(thread=paused(f"{prefix}{i}", at=at)), expected_version=None)


async def settle(watcher: InboxWatcher, store: CountingStore, rows: int) -> int:
    """Poll until the watcher has read ``rows`` rows (on Postgres the feed holds back rows
    newer than any transaction still running on the server, e.g. another test's); returns
    the number of changes published."""
    published = 0
    for _ in range(200):
        published += await watcher.poll()
        if store.rows_read >= rows:
            return published
        await asyncio.sleep(0.05)
    raise AssertionError(f"the feed returned {store.rows_read} of {rows} rows")


def collect(hub: Hub) -> list[tuple[str, dict[str, Any]]]:
    seen: list[tuple[str, dict[str, Any]]] = []
    original = hub.publish

    def publish(topic: str, event: str, data: dict[str, Any], *rest: Any) -> Any:
        if topic == INBOX:
            seen.append((event, data))
        return original(topic, event, data, *rest)

    hub.publish = publish  # type: ignore[method-assign]
    return seen


def test_watcher_work_is_proportional_to_changes(stores: StoreFactory) -> None:
    async def go() -> None:
        store = CountingStore(stores())
        await burst(store, 1000, "old-", at=T0 - timedelta(hours=1))  # waiting before start
        agent = Agent(model=ScriptedModel([]), checkpointer=store)  # type: ignore[arg-type]
        hub = Hub()
        events = collect(hub)
        watcher = InboxWatcher(agent, hub, page=200, max_rows=5000, remember=300)
        await watcher.prime()
        assert store.rows_read == 0 and store.listings == 0  # startup reads no thread
        await burst(store, 1200, "new-")
        published = await settle(watcher, store, 1200)
        # Postgres may repeat a few rows committed just before the watcher started (its feed
        # starts at the oldest running transaction): they are announced as updates only
        assert 1200 <= published == store.rows_read <= (2200 if stores.kind == "postgres"
                                                        else 1200)
        raised = [d["interrupt_id"] for e, d in events if e == "request_raised"]
        assert raised == [f"i-new-{i}" for i in range(1200)]
        read = store.rows_read
        for _ in range(5):  # idle after the burst: empty reads, nothing published
            assert await watcher.poll() == 0
        assert store.rows_read == read and store.listings == 0
        assert len(watcher._recent) == 300  # bounded memory
        assert not [e for e, _ in events if e == "resync"]
        hub.close()

    asyncio.run(go())


def test_watcher_sends_one_resync_for_a_huge_burst_and_then_idles(stores: StoreFactory) -> None:
    async def go() -> None:
        store = CountingStore(stores())
        agent = Agent(model=ScriptedModel([]), checkpointer=store)  # type: ignore[arg-type]
        hub = Hub()
        events = collect(hub)
        watcher = InboxWatcher(agent, hub, page=100, max_rows=250)
        await watcher.prime()
        await burst(store, 400, "b-")
        published = await settle(watcher, store, 400)
        resyncs = [e for e, _ in events if e == "resync"]
        assert resyncs == ["resync"]  # one, not one per poll
        assert published + 250 < 400  # the capped read announced none of its rows
        read = store.rows_read
        assert read == 400
        for _ in range(3):
            assert await watcher.poll() == 0
        assert store.rows_read == read and [e for e, _ in events].count("resync") == 1
        # the next single change is announced normally
        await burst(store, 1, "after-")
        assert await settle(watcher, store, read + 1) == 1
        assert [e for e, _ in events][-2:] == ["request_raised", "thread_updated"]
        hub.close()

    asyncio.run(go())


def test_watcher_reports_a_request_decided_elsewhere(stores: StoreFactory) -> None:
    """A request raised before the watcher started and answered afterwards is reported as
    resolved (the thread lists the answered id)."""
    async def go() -> None:
        store = CountingStore(stores())
        await burst(store, 1, "x", at=T0 - timedelta(hours=1))
        agent = Agent(model=ScriptedModel([]), checkpointer=store)  # type: ignore[arg-type]
        hub = Hub()
        events = collect(hub)
        watcher = InboxWatcher(agent, hub)
        await watcher.prime()
        await settle(watcher, store, 0)
        store.rows_read = 0
        done = paused("x0").model_copy(update={"version": 2, "status": "completed",
                                                "pending": [], "resolved": ["i-x0"]})
        await store.commit(Commit(thread=done), expected_version=1)
        assert await settle(watcher, store, 1) == 1
        assert [(e, d.get("interrupt_id")) for e, d in events] == [
            ("request_resolved", "i-x0"), ("thread_updated", None)]
        hub.close()

    asyncio.run(go())


def test_a_request_pending_since_before_the_start_leaves_its_reviewers_inboxes(
        stores: StoreFactory) -> None:
    """A reviewer who could decide a request but may not read the thread once it is decided
    (not its creator, not an admin, not the decider) is still told that the request left the
    inbox, although the watcher never saw the request pending; a reviewer without the roles
    the call needs is not."""
    @tool
    def deploy(service: str) -> str:
        """Deploy a service."""
        return f"deployed {service}"

    def make_agent(store: Checkpointer) -> Agent:
        model = ScriptedModel([{"name": "deploy", "args": {"service": "api"}, "id": "c1"},
                               "done"])
        return Agent(model=model, tools=[deploy], checkpointer=store, middleware=[
            HumanInTheLoop(interrupt_on={"deploy": InterruptOn(reviewers=["ops"])})])

    async def go() -> None:
        store = stores()
        first = make_agent(store)
        paused = await first.ainvoke("deploy the api", thread_id="t1")
        assert paused.interrupted
        hub = Hub()
        watcher = InboxWatcher(make_agent(store), hub)  # a server that starts now
        await watcher.prime()
        sub = hub.subscribe(INBOX)
        done = await make_agent(store).aresume(  # decided through another process
            "t1", [{"type": "approve"}], reviewer=Reviewer("lead", frozenset({"ops"})))
        assert done.output == "done"
        for _ in range(200):
            if await watcher.poll():
                break
            await asyncio.sleep(0.05)
        events: list[StreamEvent] = []
        while not sub.queue.empty():
            ev = sub.queue.get_nowait()
            assert ev is not None
            events.append(ev)
        carol, dave = Reviewer("carol", frozenset({"ops"})), Reviewer("dave", frozenset({"sales"}))
        resolved = [e for e in events if e.event == "request_resolved" and e.visible_to(carol)]
        assert [e.data["interrupt_id"] for e in resolved] == [paused.interrupts[0].id]
        # ... and nothing of what followed: she may not read the thread any more
        seen = [(e.event, e.data["thread"]) for e in events if e.visible_to(carol)]
        assert seen == [("request_resolved", {"thread_id": "t1", "readable": False}),
                        ("thread_hidden", {"thread_id": "t1", "readable": False})]
        assert not [e for e in events if e.visible_to(dave)]
        hub.close()

    asyncio.run(go())


def test_a_request_raised_and_answered_between_two_reads_is_reported_once(
        stores: StoreFactory) -> None:
    """The watcher saw the thread before its request was raised; the request is raised and
    answered before the next read (the two changes arrive as one): it is still reported as
    resolved — once, not again on later reads of the same thread."""
    async def go() -> None:
        store = CountingStore(stores())
        agent = Agent(model=ScriptedModel([]), checkpointer=store)  # type: ignore[arg-type]
        hub = Hub()
        events = collect(hub)
        watcher = InboxWatcher(agent, hub)
        await watcher.prime()
        at = datetime.now(UTC)
        running = ThreadRecord(thread_id="r", status="running", version=1, created_at=at,
                               updated_at=at)
        await store.commit(Commit(thread=running), expected_version=None)
        await settle(watcher, store, 1)  # seen running, nothing pending
        raised = paused("r", at=at).model_copy(update={"version": 2})
        await store.commit(Commit(thread=raised), expected_version=1)
        answered = raised.model_copy(update={"version": 3, "status": "running", "pending": [],
                                             "resolved": ["i-r"]})
        await store.commit(Commit(thread=answered), expected_version=2)
        await settle(watcher, store, 2)
        later = answered.model_copy(update={"version": 4, "status": "completed"})
        await store.commit(Commit(thread=later), expected_version=3)
        await settle(watcher, store, 3)
        assert [(e, d.get("interrupt_id")) for e, d in events if e != "thread_updated"] == [
            ("request_resolved", "i-r")]
        assert [d["thread"]["status"] for e, d in events if e == "thread_updated"] == [
            "running", "running", "completed"]
        hub.close()

    asyncio.run(go())
