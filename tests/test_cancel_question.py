"""A tool that asks a question (``interrupt()``) while its run is being cancelled: the question
is asked, never turned into an error.

A run cancelled while an approved sync tool runs (``asyncio.wait_for``, Ctrl-C on an async
caller, a worker or server shutting down) waits for the tool, within ``tool_grace`` or past it.
When the tool then asks its question, the call waits for the answer and the thread for a person
(``interrupted``, the question pending, the thread released), as it would have without the
cancel. Before, the question was stored as the call's error result ("asked a question while its
run was being cancelled"): nobody was asked, the model was told of a failure, and the approved
call never ran. Every state keeps a mover: here, the person who answers; the answered call runs
once.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import StoreFactory
from interlock import (
    Agent,
    CallState,
    HumanInTheLoop,
    ScriptedModel,
    ToolContext,
    ToolMessage,
    UserMessage,
    interrupt,
    tool,
)


def _agent(store: Any, effects: Path, *, before: float, grace: timedelta) -> Agent:
    @tool
    def transfer(amount: int, ctx: ToolContext) -> str:
        """Transfer an amount, after asking for a confirmation code."""
        time.sleep(before)  # a lookup, no side effect
        code = interrupt({"question": "confirmation code?"})
        with effects.open("a", encoding="utf-8") as f:
            f.write(f"{ctx.tool_call_id} {amount} {code}\n")
        return f"transferred {amount} with code {code}"

    def script(messages: list[Any]) -> Any:
        if isinstance(messages[-1], UserMessage):
            return {"name": "transfer", "args": {"amount": 100}}
        return "done: " + str([m for m in messages if isinstance(m, ToolMessage)][-1].content)

    return Agent(model=ScriptedModel(script), tools=[transfer],
                 middleware=[HumanInTheLoop(interrupt_on={"transfer": True})],
                 checkpointer=store, tool_grace=grace)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


async def _asked(agent: Agent, thread_id: str, within: float) -> Any:
    """The thread once it waits for the tool's answer (the question stored)."""
    deadline = time.monotonic() + within
    while True:
        t = await agent.aget_thread(thread_id)
        if t.status == "interrupted" and [i.kind for i in t.interrupts] == ["input"]:
            return t
        assert time.monotonic() < deadline, (t.status, t.interrupts)
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("outlives_grace", [False, True], ids=["within-grace", "past-grace"])
def test_a_question_asked_while_the_run_is_cancelled_is_asked(
        stores: StoreFactory, tmp_path: Path, outlives_grace: bool) -> None:
    effects = tmp_path / "effects.txt"
    grace = timedelta(seconds=0.05) if outlives_grace else timedelta(seconds=30)

    async def main() -> None:
        agent = _agent(stores(), effects, before=0.5, grace=grace)
        try:
            paused = await agent.ainvoke("pay", thread_id="t")
            assert [i.kind for i in paused.interrupts] == ["review"]
            with pytest.raises(asyncio.TimeoutError):  # cancelled while the tool runs
                await asyncio.wait_for(agent.aresume("t", [{"type": "approve"}]), 0.2)
            t = await _asked(agent, "t", within=10)
            (question,) = t.interrupts
            assert question.value == {"question": "confirmation code?"}
            stored = await agent.checkpointer.load("t")
            assert stored is not None and stored.thread.lease_owner is None  # released
            assert _lines(effects) == []
            (entry,) = await agent.ajournal("t")
            assert (entry.state, entry.result) == (CallState.INTERRUPTED, None)
            # the person answers: the approved call runs, once
            done = await agent.aresume("t", value="4711")
            assert done.status == "completed", done
            assert done.output == "done: transferred 100 with code 4711"
            assert _lines(effects) == ["call_1_0 100 4711"]
            (entry,) = await agent.ajournal("t")
            assert entry.state == CallState.SUCCEEDED and entry.answers == ["4711"]
            kinds = [a.kind for a in await agent.aaudit("t")]
            assert kinds.count("input_requested") == 1 and "tool_finished" in kinds
        finally:
            await agent.aclose()

    asyncio.run(main())
