"""Storage grows linearly with the conversation (SPEC §5.1, issue 3 acceptance 5).

200 approve cycles in one thread (user message, a ``write_file`` call with ~500 bytes of
arguments, approval, a ~1 KB tool result, a final answer): the bytes added by the last 50
cycles are within 1.5x of those added by the first 50. A store that copied the history at
every step would grow quadratically and fail.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest

from interlock import Agent, HumanInTheLoop, Message, ScriptedModel, ToolMessage, tool

if TYPE_CHECKING:
    from conftest import StoreFactory

CYCLES = 200
WINDOW = 50


def model_reply(messages: Sequence[Message]) -> Any:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return f"Saved it ({len(last.content)} bytes written)."
    n = len(messages)
    return {"name": "write_file",
            "args": {"path": f"/reports/report-{n:05d}.txt", "content": f"{n:05d} " + "x" * 480}}


@tool
def write_file(path: str, content: str) -> str:
    """Write a report file (returns a ~1 KB receipt)."""
    return f"wrote {path}: " + (content * 3)[:1000]


def measure(store: Any) -> int:
    size: int = store.stored_bytes()
    return size


@pytest.mark.slow
def test_storage_grows_linearly(stores: StoreFactory) -> None:
    store = stores()
    agent = Agent(model=ScriptedModel(model_reply), tools=[write_file],
                  middleware=[HumanInTheLoop(interrupt_on={"write_file": True})],
                  checkpointer=store)
    sizes = {0: measure(store)}
    for cycle in range(1, CYCLES + 1):
        paused = agent.invoke(f"Write report number {cycle}, please.", thread_id="long")
        assert paused.interrupted
        done = agent.resume("long", [{"type": "approve"}])
        assert done.status == "completed"
        if cycle in (WINDOW, CYCLES - WINDOW, CYCLES):
            sizes[cycle] = measure(store)
    first = sizes[WINDOW] - sizes[0]
    last = sizes[CYCLES] - sizes[CYCLES - WINDOW]
    per_cycle = (sizes[CYCLES] - sizes[0]) / CYCLES
    print(f"\n{stores.kind}: first {WINDOW} cycles +{first} B, last {WINDOW} cycles +{last} B, "
          f"{per_cycle:.0f} B/cycle over {CYCLES} cycles")
    assert len(agent.get_thread("long").messages) == 4 * CYCLES
    assert first > 0
    assert last <= 1.5 * first, sizes
