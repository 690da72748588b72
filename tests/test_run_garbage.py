"""A run's own objects are freed when it ends, by reference counting: no run leaves a
reference cycle of interlock's objects (its transaction, the thread's snapshot and records),
which only the garbage collector could free, later and at a cost that grows with them."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from conftest import StoreFactory
from interlock import Agent, ScriptedModel, UserMessage, interrupt, tool
from test_warm_cycles import make_agent

DECISIONS: list[list[dict[str, Any]]] = [
    [{"type": "approve"}],
    [{"type": "reject", "message": "not now"}],
    [{"type": "edit", "edited_action": {"name": "write_file", "args": {"path": "edited"}}}],
    [{"type": "respond", "message": "use another name"}],
]


@pytest.fixture
def saved_garbage() -> Iterator[Callable[[], list[object]]]:
    """With the collector off, what a collection then finds unreachable (the cycles made
    meanwhile). The interlock objects alive when it starts are held until it ends: an earlier
    test's agent that something still holds (a thread still running its slow tool, on a busy
    machine) and lets go meanwhile is not a cycle this test's runs made."""
    gc.collect()
    held = [o for o in gc.get_objects()
            if isinstance(m := type(o).__module__, str) and m.startswith("interlock")]
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)

    def found() -> list[object]:
        gc.collect()
        out = list(gc.garbage)
        gc.garbage.clear()
        return out

    try:
        yield found
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
        del held


def interlock_objects(objects: list[object]) -> list[str]:
    return sorted({type(o).__qualname__ for o in objects
                   if type(o).__module__.startswith("interlock")})


@pytest.mark.parametrize("api", ["blocking", "async"])
def test_runs_leave_no_cycle_of_interlock_objects(
    stores: StoreFactory, api: str, saved_garbage: Callable[[], list[object]],
) -> None:
    ran: list[str] = []
    agent = make_agent(stores(), ran)
    loop = asyncio.new_event_loop()

    def cycle(n: int, decisions: list[dict[str, Any]]) -> Any:
        tid = f"t{n}"
        if api == "blocking":
            paused = agent.invoke("write a file", thread_id=tid)
            assert paused.interrupted
            return agent.resume(tid, decisions=decisions)
        paused = loop.run_until_complete(agent.ainvoke("write a file", thread_id=tid))
        assert paused.interrupted
        return loop.run_until_complete(agent.aresume(tid, decisions=decisions))

    try:
        cycle(0, DECISIONS[0])  # first use: whatever a process builds once
        saved_garbage()
        outcomes = [cycle(n, d) for n, d in enumerate(DECISIONS * 3, start=1)]
        left = interlock_objects(saved_garbage())
    finally:
        loop.close()
        agent.close()
    assert all(o.output.startswith("done after") for o in outcomes)
    assert ran.count("edited") == 3 and len(ran) == 1 + 3 + 3  # approve and edit ran
    assert left == []


def test_a_tool_question_and_a_subagent_pause_leave_no_cycle(
    stores: StoreFactory, saved_garbage: Callable[[], list[object]],
) -> None:
    """The two pauses that travel up from a running tool as exceptions, ``interrupt()`` in a
    tool and a sub-agent waiting for its reviewer: the exception, held by the tool's task, must
    not keep the run's frames (and so its transaction) in a cycle."""
    store = stores()
    painted: list[str] = []

    @tool
    def paint(room: str) -> str:
        """Paint a room."""
        colour = interrupt({"question": f"Which colour for the {room}?"})
        painted.append(f"{room} {colour}")
        return f"painted {colour}"

    def asks(messages: Any) -> Any:
        if isinstance(messages[-1], UserMessage):
            return {"name": "paint", "args": {"room": "hall"}}
        return "painted"

    ran: list[str] = []
    child = make_agent(store, ran)

    def delegates(messages: Any) -> Any:
        if isinstance(messages[-1], UserMessage):
            return {"name": "writer", "args": {"task": "write it"}}
        return "delegated"

    painter = Agent(model=ScriptedModel(asks), tools=[paint], checkpointer=store)
    parent = Agent(model=ScriptedModel(delegates), checkpointer=store,
                   tools=[child.as_tool(name="writer", description="Writes files.")])

    def cycle(n: int) -> None:
        assert painter.invoke("paint", thread_id=f"p{n}").interrupted
        assert painter.resume(f"p{n}", value="red").output == "painted"
        assert parent.invoke("delegate", thread_id=f"d{n}").interrupted
        assert parent.resume(f"d{n}", decisions=[{"type": "approve"}]).output == "delegated"

    try:
        cycle(0)
        saved_garbage()
        for n in range(1, 6):
            cycle(n)
        left = interlock_objects(saved_garbage())
    finally:
        for a in (painter, parent, child):
            a.close()
    assert painted == ["hall red"] * 6 and len(ran) == 6
    assert left == []
