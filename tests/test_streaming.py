"""Streaming events for first and resumed runs, and parity of the sync, async and streaming
entry points (acceptance 5 of the core issue; the HITL tests are parametrised over them too)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import EntryPoint, StoreFactory
from interlock import (
    Agent,
    CallState,
    Command,
    HumanInTheLoop,
    InterruptRaised,
    ModelTextDelta,
    RunCompleted,
    ScriptedModel,
    SqliteCheckpointer,
    ToolCallProposed,
    ToolFinished,
    ToolMessage,
    ToolStarted,
    tool,
)
from seed_agent import DELETE_QUERY, call, make_agent

SCRIPT: list[Any] = [
    ("Let me check first.", [call("read_data", {"table": "records"}, "r1"),
                             call("write_file", {"path": "a", "content": "x"}, "w1")]),
    "The file was written and the records were read.",
]


def kinds(events: list[Any]) -> list[str]:
    return [type(e).__name__ for e in events]


def test_stream_first_and_resumed_run(stores: StoreFactory) -> None:
    agent, _, _ = make_agent(SCRIPT, stores())
    first = list(agent.stream("go", thread_id="t"))
    text = "".join(e.text for e in first if isinstance(e, ModelTextDelta))
    assert text == "Let me check first."
    assert [k for k in kinds(first) if k != "ModelTextDelta"] == [
        "ToolCallProposed", "ToolCallProposed", "InterruptRaised", "ToolStarted",
        "ToolFinished", "RunCompleted"]
    proposed = [e.call for e in first if isinstance(e, ToolCallProposed)]
    assert [(c.id, c.args) for c in proposed] == [("r1", {"table": "records"}),
                                                 ("w1", {"path": "a", "content": "x"})]
    raised = [e for e in first if isinstance(e, InterruptRaised)]
    assert len(raised) == 1 and raised[0].interrupt.value.action_requests[0].tool_call_id == "w1"
    # the ungated call runs before the run pauses
    started = [e.call.id for e in first if isinstance(e, ToolStarted)]
    assert started == ["r1"]
    last = first[-1]
    assert isinstance(last, RunCompleted) and last.result.status == "interrupted"

    resumed = list(agent.stream(Command(resume={"decisions": [{"type": "approve"}]}),
                                thread_id="t"))
    assert kinds(resumed)[:2] == ["ToolStarted", "ToolFinished"]
    finished = [e.result for e in resumed if isinstance(e, ToolFinished)]
    assert [(r.tool_call_id, r.content) for r in finished] == [("w1", "wrote 1 characters to a")]
    deltas = [e.text for e in resumed if isinstance(e, ModelTextDelta)]
    assert len(deltas) > 3 and "".join(deltas) == SCRIPT[1]
    end = resumed[-1]
    assert isinstance(end, RunCompleted) and end.result.output == SCRIPT[1]


def test_async_stream(stores: StoreFactory) -> None:
    agent, _, _ = make_agent(SCRIPT, stores())

    async def go() -> list[Any]:
        return [e async for e in agent.astream("go", thread_id="t")]

    events = asyncio.run(go())
    assert isinstance(events[-1], RunCompleted) and events[-1].result.interrupted


def _scenario(entry: EntryPoint, store: Any) -> list[dict[str, Any]]:
    tid = f"parity-{entry.kind}"
    script = [
        [call("execute_sql", {"query": DELETE_QUERY}, "s1"),
         call("write_file", {"path": "a", "content": "1"}, "w1"),
         call("read_data", {"table": "x"}, "r1")],
        [call("ask_user", {"question": "confirm?"}, "q1")],
        "done",
    ]
    agent, _, _ = make_agent(script, store)
    outcomes = []
    r = entry.invoke(agent, "start", thread_id=tid)
    outcomes.append(r.to_json())
    r = entry.resume(agent, tid, [{"type": "reject", "message": "no"},
                                  {"type": "edit", "edited_action": {
                                      "name": "write_file", "args": {"path": "b", "content": "2"}}}])
    outcomes.append(r.to_json())
    r = entry.resume(agent, tid, [{"type": "respond", "message": "yes"}])
    outcomes.append(r.to_json())
    for o in outcomes:
        o.pop("thread_id")
        for i in o["interrupts"]:
            i.pop("id"), i.pop("created_at")
    return outcomes


def test_entry_points_give_identical_results(stores: StoreFactory) -> None:
    results = {kind: _scenario(EntryPoint(kind), stores()) for kind in ("sync", "async", "stream")}
    assert results["sync"] == results["async"] == results["stream"]
    assert [o["status"] for o in results["sync"]] == ["interrupted", "interrupted", "completed"]


@pytest.mark.parametrize("leave", ["break", "aclose"])
def test_leaving_a_stream_while_its_tool_runs_keeps_the_tools_outcome(
        tmp_path: Path, leave: str) -> None:
    """Invariant 2: the consumer leaves ``astream`` while the approved call's sync tool runs
    (``break``, or closing the stream), then closes the agent: the run is cancelled as a
    timeout cancels it, the tool is waited for and its result stored, so the next process
    never asks whether the call ran."""
    ran: list[str] = []

    @tool
    def work(n: int) -> str:
        """Do work n."""
        ran.append("start")
        time.sleep(0.5)
        ran.append("done")
        return f"worked {n}"

    def reply(messages: Any) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return f"finished: {messages[-1].content}"
        return {"name": "work", "args": {"n": 1}, "id": "w1"}

    def agent() -> Agent:
        return Agent(model=ScriptedModel(reply), tools=[work],
                     middleware=[HumanInTheLoop(interrupt_on={"work": True})],
                     checkpointer=SqliteCheckpointer(tmp_path / "db.sqlite"))

    async def first() -> None:
        a = agent()
        assert (await a.ainvoke("go", thread_id="t1")).interrupted
        stream = a.astream(Command(resume=[{"type": "approve"}]), thread_id="t1")
        async for event in stream:
            if isinstance(event, ToolStarted):
                break
        if leave == "aclose":
            await stream.aclose()
        await a.aclose()

    asyncio.run(first())
    assert ran == ["start", "done"]
    again = agent()
    try:
        [entry] = again.journal("t1")
        assert entry.state == CallState.SUCCEEDED and entry.result is not None
        assert entry.result.content == "worked 1"
        again.recover_stale()
        state = again.get_thread("t1")
        assert state.status == "completed" and state.interrupts == []
        assert not [r for r in again.audit("t1") if r.kind == "outcome_unknown"]
        assert ran == ["start", "done"]
    finally:
        again.close()
