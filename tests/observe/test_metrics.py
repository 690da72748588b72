"""``/metrics``, scraped over HTTP and read with prometheus_client's own parser while requests
wait, are decided and expire; labels stay bounded with 10,000 waiting threads."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import StoreFactory
from interlock import Agent, HumanInTheLoop, ScriptedModel, observe, tool
from interlock.authz import Reviewer
from interlock.hitl import ActionRequest, HITLRequest, InterruptOn, ReviewConfig
from interlock.interrupts import Interrupt
from interlock.observe.endpoint import serve_metrics
from interlock.observe.metrics import Metrics
from interlock.storage.base import Checkpointer, Commit, ThreadRecord

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


async def scrape(url: str) -> Samples:
    async with httpx.AsyncClient() as client:
        r = await client.get(url, timeout=60)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(r.text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def labelled(samples: Samples, name: str) -> list[dict[str, str]]:
    return [dict(k[1]) for k in samples if k[0] == name]


@pytest.fixture
def metrics_on() -> Iterator[tuple[Metrics, Clock]]:
    clock = Clock()
    metrics = Metrics(tools=["write_file", "delete_file"], roles=["ops"],
                      channels=["webhook:ops"], clock=clock)
    observe.install(observe.Observer(metrics=metrics))
    yield metrics, clock
    observe.uninstall()


@pytest.fixture
async def endpoint(metrics_on: tuple[Metrics, Clock],
                   durable_stores: StoreFactory) -> AsyncIterator[tuple[str, Checkpointer]]:
    store = durable_stores()
    server = await serve_metrics(metrics_on[0], store, port=0)
    port = server.sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}/metrics", store
    server.close()
    await server.wait_closed()


def build(store: Checkpointer, clock: Clock, effects: list[str]) -> Agent:
    @tool
    def write_file(path: str) -> str:
        """Write a file."""
        effects.append(f"write {path}")
        return "written"

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        effects.append(f"delete {path}")
        return "deleted"

    def script(messages: list[object]) -> object:
        text = getattr(messages[0], "content", "")
        if len(messages) == 1:
            name = "delete_file" if text.startswith("delete") else "write_file"
            return {"name": name, "args": {"path": text.split()[-1]}, "id": "c1"}
        return "done"

    return Agent(model=ScriptedModel(script), tools=[write_file, delete_file],
                 checkpointer=store, clock=clock, middleware=[HumanInTheLoop(interrupt_on={
                     "write_file": InterruptOn(reviewers=["ops"]),
                     "delete_file": InterruptOn(expires_after=timedelta(minutes=1),
                                                escalate_to=["ops"],
                                                escalate_after=timedelta(seconds=15))})])


@pytest.mark.anyio
async def test_metrics_while_requests_wait_are_decided_and_expire(
        metrics_on: tuple[Metrics, Clock], endpoint: tuple[str, Checkpointer]) -> None:
    _, clock = metrics_on
    url, store = endpoint
    effects: list[str] = []
    agent = build(store, clock, effects)
    empty = await scrape(url)
    assert value(empty, "interlock_oldest_pending_seconds") == 0
    assert labelled(empty, "interlock_pending_calls") == []

    first = await agent.ainvoke("write a", thread_id="t1")
    clock.now += timedelta(seconds=10)
    await agent.ainvoke("write b", thread_id="t2")
    await agent.ainvoke("delete c", thread_id="t3")
    clock.now += timedelta(seconds=20)
    s = await scrape(url)
    assert value(s, "interlock_pending_calls", tool="write_file") == 2
    assert value(s, "interlock_pending_calls", tool="delete_file") == 1
    assert value(s, "interlock_pending_calls_by_role", role="ops") == 2
    assert value(s, "interlock_pending_calls_by_role", role="any") == 1
    assert value(s, "interlock_oldest_pending_seconds") == 30
    assert value(s, "interlock_decisions_total", decision="approve", tool="write_file") == 0
    assert value(s, "interlock_escalations_total") == 0
    await agent.aexpire_due()  # the delete request is past escalate_after, not its deadline
    s = await scrape(url)
    assert value(s, "interlock_escalations_total") == 1
    assert value(s, "interlock_expiries_total", tool="delete_file") == 0

    # t1 is approved 30 s after it was asked, and its tool starts right away
    await agent.aresume("t1", [{"type": "approve"}], interrupt_id=first.interrupts[0].id,
                        reviewer=Reviewer("alice", frozenset({"ops"})))
    assert effects == ["write a"]
    s = await scrape(url)
    assert value(s, "interlock_pending_calls", tool="write_file") == 1
    assert value(s, "interlock_decisions_total", decision="approve", tool="write_file") == 1
    assert value(s, "interlock_time_to_decision_seconds_count", decision="approve") == 1
    assert value(s, "interlock_time_to_decision_seconds_sum", decision="approve") == 30
    assert value(s, "interlock_time_to_decision_seconds_bucket", decision="approve",
                 le="15.0") == 0
    assert value(s, "interlock_time_to_decision_seconds_bucket", decision="approve",
                 le="30.0") == 1
    assert value(s, "interlock_decision_to_tool_start_seconds_count") == 1
    assert value(s, "interlock_decision_to_tool_start_seconds_sum") == 0  # same clock tick
    assert value(s, "interlock_oldest_pending_seconds") == 20  # t2 is the oldest now

    # the delete request's deadline passes: the sweep expires it
    clock.now += timedelta(minutes=2)
    await agent.aexpire_due()
    s = await scrape(url)
    assert value(s, "interlock_expiries_total", tool="delete_file") == 1
    assert value(s, "interlock_pending_calls", tool="delete_file") == 0
    assert ({"tool": "delete_file"} not in labelled(s, "interlock_pending_calls"))
    assert value(s, "interlock_time_to_decision_seconds_count", decision="expire") == 1
    assert value(s, "interlock_time_to_decision_seconds_sum", decision="expire") == 140

    await agent.aresume("t2", [{"type": "reject", "message": "no"}],
                        reviewer=Reviewer("bob", frozenset({"ops"})))
    s = await scrape(url)
    assert value(s, "interlock_decisions_total", decision="reject", tool="write_file") == 1
    assert value(s, "interlock_decision_to_tool_start_seconds_count") == 1  # nothing ran
    assert labelled(s, "interlock_pending_calls") == []
    assert value(s, "interlock_oldest_pending_seconds") == 0
    assert effects == ["write a"]
    # no label anywhere holds a thread, call or request id
    ids = {"t1", "t2", "t3", "c1", first.interrupts[0].id}
    assert not any(v in ids for k in s for _, v in k[1])
    assert value(s, "interlock_recoveries_total") == 0

    # a run whose owner (another host) stopped: once its lease ran out, it is taken over
    snap = await store.load("t1")
    assert snap is not None
    stopped = snap.thread.model_copy(update={
        "status": "running", "version": snap.thread.version + 1,
        "lease_owner": "elsewhere|4242|gone", "lease_until": clock.now - timedelta(seconds=1)})
    await store.commit(Commit(thread=stopped), expected_version=snap.thread.version)
    assert (await agent.arecover("t1")).status == "completed"
    s = await scrape(url)
    assert value(s, "interlock_recoveries_total") == 1
    assert value(s, "interlock_lease_takeovers_total") == 1


async def _many_waiting(store: Checkpointer, n: int) -> None:
    """``n`` interrupted threads, each asking about a tool and a role of its own."""
    async def one(i: int) -> None:
        request = HITLRequest(
            action_requests=[ActionRequest(tool_call_id=f"c{i}", name=f"tool_{i}", args={},
                                           description="")],
            review_configs=[ReviewConfig(action_name=f"tool_{i}", allowed_decisions=["approve"],
                                         reviewers=[f"role_{i}"])])
        at = T0 - timedelta(seconds=i)
        t = ThreadRecord(thread_id=f"many-{i}", status="interrupted", version=1, created_at=at,
                         updated_at=at, pending=[Interrupt(id=f"i{i}", kind="review",
                                                           value=request, created_at=at)])
        await store.commit(Commit(thread=t), expected_version=None)

    for start in range(0, n, 500):
        await asyncio.gather(*(one(i) for i in range(start, min(n, start + 500))))


@pytest.mark.slow
@pytest.mark.anyio
async def test_labels_stay_bounded_with_10000_waiting_threads(
        metrics_on: tuple[Metrics, Clock], endpoint: tuple[str, Checkpointer]) -> None:
    _, clock = metrics_on
    url, store = endpoint
    await _many_waiting(store, 10_000)
    started = time.perf_counter()
    s = await scrape(url)
    took = time.perf_counter() - started
    assert labelled(s, "interlock_pending_calls") == [{"tool": "other"}]
    assert value(s, "interlock_pending_calls", tool="other") == 10_000
    assert labelled(s, "interlock_pending_calls_by_role") == [{"role": "other"}]
    assert value(s, "interlock_oldest_pending_seconds") == 9_999
    assert len(s) < 200  # every series of the exposition, histograms' buckets included
    print(f"scrape with 10,000 waiting threads: {took:.2f} s, {len(s)} samples")

    # with no configured tools, the first max_values values are kept and the rest is "other"
    dynamic = Metrics(max_values=20, clock=clock)
    await dynamic.refresh(store)
    got = {dict(k[1])["tool"] for k in {
        (sm.name, frozenset(sm.labels.items())): 0 for f in text_string_to_metric_families(
            dynamic.exposition().decode()) for sm in f.samples}
        if k[0] == "interlock_pending_calls"}
    assert len(got) == 21 and "other" in got


@pytest.mark.anyio
async def test_outbox_backlog_and_delivery_failures_by_channel(
        metrics_on: tuple[Metrics, Clock], endpoint: tuple[str, Checkpointer]) -> None:
    from interlock.notify import Dispatcher, NotifyConfig, build_channels
    from notify.fakes import new_secret, webhook_receiver

    _, clock = metrics_on
    url, store = endpoint
    agent = build(store, clock, [])
    await agent.ainvoke("write a", thread_id="o1")
    await agent.ainvoke("write b", thread_id="o2")
    events = await store.outbox_list(status="pending")
    assert len(events) == 2
    s = await scrape(url)
    assert value(s, "interlock_outbox_backlog", channel="undispatched") == 2
    secret = new_secret()
    with webhook_receiver(secret, fail_first=1000) as rx:
        config = NotifyConfig.model_validate({
            "webhooks": [{"name": "ops", "url": rx.url, "secret": secret}],
            "dispatch": {"max_attempts": 2}})
        dispatcher = Dispatcher(store, build_channels(config, store), settings=config.dispatch,
                                clock=clock)
        await dispatcher.run_once()
        s = await scrape(url)
        assert value(s, "interlock_outbox_delivery_failures_total", channel="webhook:ops",
                     final="false") == 2
        assert value(s, "interlock_outbox_backlog", channel="webhook:ops") == 2
        assert value(s, "interlock_outbox_backlog", channel="undispatched") == 0
        assert value(s, "interlock_outbox_dead_events") == 0
        clock.now += timedelta(hours=1)  # past the backoff: the second and last attempt
        await dispatcher.run_once()
        s = await scrape(url)
        assert value(s, "interlock_outbox_delivery_failures_total", channel="webhook:ops",
                     final="true") == 2
        assert value(s, "interlock_outbox_dead_events") == 2
        assert labelled(s, "interlock_outbox_backlog") == []
        assert len(rx.received) == 4


@pytest.mark.anyio
async def test_a_reviewer_whose_id_holds_a_colon_is_timed_to_the_tool_start(
        metrics_on: tuple[Metrics, Clock], endpoint: tuple[str, Checkpointer]) -> None:
    """An id such as "okta:alice" is a reviewer's (only the system's names are reserved):
    their approval's wait for the tool is measured."""
    _, clock = metrics_on
    url, store = endpoint
    effects: list[str] = []
    agent = build(store, clock, effects)
    first = await agent.ainvoke("write a", thread_id="t1")
    clock.now += timedelta(seconds=5)
    await agent.aresume("t1", [{"type": "approve"}], interrupt_id=first.interrupts[0].id,
                        reviewer=Reviewer("okta:alice", frozenset({"ops"})))
    assert effects == ["write a"]
    s = await scrape(url)
    assert value(s, "interlock_decision_to_tool_start_seconds_count") == 1


async def status_is(status: Callable[[], Awaitable[str]], want: str) -> bool:
    return await status() == want


async def eventually(check: Callable[[], Awaitable[bool]], seconds: float = 60) -> None:
    for _ in range(int(seconds / 0.05)):
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {seconds} s")


def test_only_a_worker_exports_its_heartbeat_and_a_busy_worker_keeps_it() -> None:
    """A server exports no worker heartbeat (the "no worker alive" alert would fire on
    every server); a worker whose run slots are all busy is alive, and says so."""
    from prometheus_client.parser import text_string_to_metric_families as parse

    def names(m: Metrics) -> set[str]:
        return {s.name for f in parse(m.exposition().decode()) for s in f.samples}

    assert "interlock_worker_last_poll_timestamp_seconds" not in names(Metrics())
    assert "interlock_worker_last_poll_timestamp_seconds" in names(Metrics(worker=True))


@pytest.mark.postgres
def test_a_busy_worker_keeps_its_heartbeat(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker whose only run slot holds a long run does not read the queue, and is alive:
    its heartbeat goes on, so the "no worker alive" alert does not fire on it."""
    from conftest import require_postgres
    from interlock.worker import Worker
    from server.server_agents import EXECUTED, make_agent

    require_postgres()
    release = tmp_path / "release"
    monkeypatch.setenv("INTERLOCK_TEST_RELEASE", str(release))
    pg = StoreFactory("postgres", tmp_path)
    api, runner = make_agent(pg()), make_agent(pg())
    metrics = Metrics(worker=True)
    observe.install(observe.Observer(metrics=metrics))

    def beat() -> float:
        assert metrics.worker_heartbeat is not None
        return float(metrics.worker_heartbeat._value.get())

    async def main() -> None:
        EXECUTED.clear()
        worker = Worker(runner, concurrency=1, poll_interval=0.05)
        stop = asyncio.Event()
        task = asyncio.create_task(worker.run(stop))
        first = await api.ainvoke("hang SELECT pg_sleep(1)", thread_id="b1", handoff=True)
        assert first.status == "queued"
        async def status() -> str:
            return (await api.aget_thread("b1")).status

        await eventually(lambda: status_is(status, "interrupted"))
        paused = await api.aget_thread("b1")
        await api.aresume("b1", [{"type": "approve"}], interrupt_id=paused.interrupts[0].id,
                          handoff=True)

        async def started_tool() -> bool:
            return any(name == "hang_sql:started" for name, _ in EXECUTED)

        await eventually(started_tool)
        started = beat()
        await asyncio.sleep(0.5)  # the slot is busy all along
        assert beat() > started
        release.touch()
        await eventually(lambda: status_is(status, "completed"))
        stop.set()
        await task

    try:
        asyncio.run(main())
    finally:
        observe.uninstall()
        pg.cleanup()
