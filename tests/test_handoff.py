"""Hand-off through the library: ``handoff=True`` stores the input with the run queued (one
commit) and runs nothing; a :class:`~interlock.worker.Worker` of another agent on the same
store claims the run and finishes it. Stores without a run queue refuse the hand-off."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from conftest import StoreFactory, require_postgres
from interlock import ConfigurationError, InterruptConflict, ThreadBusy
from interlock.worker import Worker
from server.server_agents import EXECUTED, make_agent


def test_handoff_needs_a_store_with_a_run_queue(tmp_path: Path) -> None:
    for kind in ("memory", "sqlite"):
        agent = make_agent(StoreFactory(kind, tmp_path)())
        with pytest.raises(ConfigurationError, match="no run queue"):
            asyncio.run(agent.ainvoke("sql SELECT 1", thread_id="t1", handoff=True))
        with pytest.raises(ConfigurationError, match="no run queue"):
            Worker(agent)


@pytest.mark.postgres
def test_handed_off_runs_are_run_once_by_a_worker(tmp_path: Path) -> None:
    require_postgres()
    pg = StoreFactory("postgres", tmp_path)
    api, runner = make_agent(pg()), make_agent(pg())
    worker = Worker(runner, concurrency=4)

    async def main() -> None:
        EXECUTED.clear()
        # a new message: stored and queued, nothing run (not even the model)
        queued = await api.ainvoke("sql DELETE FROM carts", thread_id="h1", handoff=True)
        assert queued.status == "queued" and queued.version == 1
        state = await api.aget_thread("h1")
        assert state.status == "running" and len(state.messages) == 1
        with pytest.raises(ThreadBusy, match="run queue"):
            await api.ainvoke("sql more", thread_id="h1", handoff=True)
        assert await worker.run_once() == 1
        paused = await api.aget_thread("h1")
        assert paused.status == "interrupted" and EXECUTED == []
        # the decision: stored with the run queued; a second answer loses; then the worker
        intr = paused.interrupts[0].id
        queued = await api.aresume("h1", [{"type": "approve"}], interrupt_id=intr,
                                   handoff=True)
        assert queued.status == "queued"
        with pytest.raises(InterruptConflict):
            await api.aresume("h1", [{"type": "approve"}], interrupt_id=intr, handoff=True)
        with pytest.raises(ThreadBusy):
            await api.acancel("h1")
        assert EXECUTED == []
        assert await worker.run_once() == 1
        done = await api.aget_thread("h1")
        assert done.status == "completed"
        assert done.messages[-1].content == "Done. OK: ran DELETE FROM carts"
        assert EXECUTED == [("execute_sql", {"query": "DELETE FROM carts"})]
        assert await worker.run_once() == 0  # nothing left on the queue
        assert await runner.checkpointer.queue_list() == []  # type: ignore[attr-defined]
        assert worker.stats.claimed == 2 and worker.stats.finished == 2

    try:
        asyncio.run(main())
    finally:
        pg.cleanup()


@pytest.mark.postgres
def test_a_worker_relays_its_runs_events_with_the_text_joined(tmp_path: Path) -> None:
    """A worker sends the events of a run it makes to the listening API servers: each tool
    and request event once, in order, and the model's streamed text joined into a few pieces
    (not one ``NOTIFY`` per token); the run's end is left to the server that queued it."""
    import queue as queues

    from interlock import Agent, ScriptedModel, tool
    from interlock.storage import EventRelay

    require_postgres()
    pg = StoreFactory("postgres", tmp_path)
    answer = " ".join(f"word{i}" for i in range(300))

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    def make(store: Any) -> Agent:
        return Agent(model=ScriptedModel([[{"name": "lookup", "args": {"key": "k"},
                                            "id": "c1"}], answer]),
                     tools=[lookup], checkpointer=store)

    try:
        api, runner = make(pg()), make(pg())
        listener = pg()
        assert isinstance(listener, EventRelay)
        got: queues.Queue[tuple[str, dict[str, Any]]] = queues.Queue()
        stop = listener.on_relayed_event(lambda tid, ev: got.put((tid, ev)))
        worker = Worker(runner)

        async def main() -> None:
            assert (await api.ainvoke("go", thread_id="r1", handoff=True)).status == "queued"
            assert await worker.run_once() == 1

        asyncio.run(main())
        assert (asyncio.run(api.aget_thread("r1"))).messages[-1].content == answer
        events: list[dict[str, Any]] = []
        while not any(e["type"] == "model_text_delta" and e["text"].endswith("word299")
                      for e in events):
            tid, ev = got.get(timeout=10)
            assert tid == "r1"
            events.append(ev)
        stop()
        kinds = [e["type"] for e in events]
        assert kinds[:3] == ["tool_call_proposed", "tool_started", "tool_finished"]
        texts = [e["text"] for e in events if e["type"] == "model_text_delta"]
        assert "".join(texts) == answer and 1 <= len(texts) <= 30  # 300 pieces streamed
        assert "run_completed" not in kinds
    finally:
        pg.cleanup()
