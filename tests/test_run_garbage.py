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
    meanwhile)."""
    gc.collect()
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
