"""The blocking API's plumbing: Ctrl-C, and one checkpointer shared by blocking and async
callers in different threads (a blocking call runs the store's I/O in its own thread)."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from typing import Any

import pytest

from conftest import StoreFactory, unavailable
from interlock import Agent, HumanInTheLoop, Message, ScriptedModel, UserMessage, tool


def test_ctrl_c_cancels_a_blocking_call_at_its_next_await(sqlite_stores: StoreFactory) -> None:
    if threading.current_thread() is not threading.main_thread():
        unavailable("The Ctrl-C test", "signals are delivered to the main thread only")
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        unavailable("The Ctrl-C test", "the test runner replaced the SIGINT handler")

    reached: list[str] = []

    @tool
    async def slow() -> str:
        """Takes long."""
        signal.raise_signal(signal.SIGINT)  # the user presses Ctrl-C while the tool runs
        reached.append("after the signal")  # not interrupted mid-statement...
        await asyncio.sleep(30)  # ...but cancelled here
        return "finished"

    agent = Agent(model=ScriptedModel([{"name": "slow", "args": {}, "id": "s1"}, "done"]),
                  tools=[slow], checkpointer=sqlite_stores())
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        agent.invoke("go", thread_id="t")
    assert time.monotonic() - started < 10  # not after the tool's 30 s
    assert reached == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    # the call was running when it was cancelled: like a crash, recovery asks a person
    out = agent.recover("t")
    assert out.interrupted
    [action] = out.interrupts[0].value.action_requests
    assert action.tool_call_id == "s1"
    assert "outcome unknown" in (action.description or "")
    agent.close()


def test_blocking_and_async_callers_share_one_checkpointer(stores: StoreFactory) -> None:
    """A blocking caller runs the store's I/O in its own thread while async callers use the
    store's worker thread: both at once, on one store, lose and duplicate nothing."""
    runs = {"n": 0}
    lock = threading.Lock()

    @tool
    def bump(n: int) -> str:
        """Count."""
        with lock:
            runs["n"] += 1
        return f"bumped {n}"

    def script(messages: list[Message]) -> Any:
        if isinstance(messages[-1], UserMessage):
            return {"name": "bump", "args": {"n": len(messages)}, "id": f"c{len(messages)}"}
        return "ok"

    agent = Agent(model=ScriptedModel(script), tools=[bump],
                  middleware=[HumanInTheLoop(interrupt_on={"bump": True})],
                  checkpointer=stores())
    cycles = 15
    errors: list[BaseException] = []

    def blocking_side() -> None:
        try:
            for i in range(cycles):
                assert agent.invoke("again", thread_id=f"b{i % 3}").interrupted
                assert agent.resume(f"b{i % 3}", [{"type": "approve"}]).output == "ok"
        except BaseException as exc:  # reported below
            errors.append(exc)

    async def async_side() -> None:
        for i in range(cycles):
            assert (await agent.ainvoke("again", thread_id=f"a{i % 3}")).interrupted
            out = await agent.aresume(f"a{i % 3}", [{"type": "approve"}])
            assert out.output == "ok"

    worker = threading.Thread(target=blocking_side)
    worker.start()
    asyncio.run(async_side())
    worker.join(60)
    assert not worker.is_alive() and errors == []
    assert runs["n"] == 2 * cycles
    for prefix in ("a", "b"):
        for k in range(3):
            state = agent.get_thread(f"{prefix}{k}")
            assert state.status == "completed"
            assert len(state.messages) == 4 * (cycles // 3)  # user, call, result, answer
    agent.close()


def test_storage_io_runs_inline_only_on_the_blocking_calls_own_loop() -> None:
    """The blocking API's shortcut must not leak: a loop started from inside a blocking call
    (e.g. a sync tool running ``asyncio.run``) still hands blocking I/O to the worker."""
    from concurrent.futures import ThreadPoolExecutor

    from interlock._offload import offload
    from interlock._sync import run_blocking

    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store-worker")

    def where() -> str:
        return threading.current_thread().name

    async def probe() -> str:
        return await offload(worker, where)

    async def from_blocking_call() -> tuple[str, str]:
        here = await offload(worker, where)
        # what a sync tool does in its worker thread (which gets a copy of the context): a
        # loop of its own
        nested = await asyncio.to_thread(lambda: asyncio.run(probe()))
        return here, nested

    try:
        here, nested = run_blocking(from_blocking_call(), "probe")
        assert here == threading.current_thread().name  # inline: the caller waits anyway
        assert nested.startswith("store-worker")  # another loop: handed to the worker
        assert asyncio.run(probe()).startswith("store-worker")  # plain async caller
    finally:
        worker.shutdown()


def test_a_tool_that_outlives_ctrl_c_has_its_result_stored_before_close(
        sqlite_stores: StoreFactory) -> None:
    """Invariant 2 (a known outcome is never turned into "unknown"): Ctrl-C while a sync tool
    runs ends the blocking call, but the tool (in its thread) goes on and returns. The
    process's next and last blocking call is ``close()``: it waits for that tool and stores its
    result before closing the store (it used to close the store at once; the result was lost
    at exit and the next process asked "outcome unknown" about a call that had finished)."""
    from datetime import timedelta

    if threading.current_thread() is not threading.main_thread():
        unavailable("The Ctrl-C test", "signals are delivered to the main thread only")
    gate, ran = threading.Event(), []

    @tool
    def transfer() -> str:
        """Move money (not idempotent)."""
        ran.append(1)
        signal.raise_signal(signal.SIGINT)  # the user presses Ctrl-C while the tool runs
        gate.wait(20)
        return "transferred"

    model = [{"name": "transfer", "args": {}, "id": "t1"}, "done"]
    agent = Agent(model=ScriptedModel(model), tools=[transfer], checkpointer=sqlite_stores(),
                  tool_grace=timedelta(seconds=0.2))
    with pytest.raises(KeyboardInterrupt):
        agent.invoke("go", thread_id="t")
    threading.Timer(0.5, gate.set).start()  # the tool returns after the call was given up
    agent.close()
    again = Agent(model=ScriptedModel(model), tools=[transfer], checkpointer=sqlite_stores())
    try:
        (entry,) = again.journal("t")
        assert entry.state == "succeeded" and entry.result is not None
        assert entry.result.content == "transferred"
        assert "outcome_unknown" not in [a.kind for a in again.audit("t")]
        out = again.recover("t")
        assert out.output == "done" and not out.interrupted
        assert ran == [1]
    finally:
        again.close()
