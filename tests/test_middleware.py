"""The public Middleware protocol and ``interrupt()`` (SPEC §3, §4.8): custom HITL logic."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import EntryPoint, StoreFactory
from interlock import (
    Agent,
    HumanInTheLoop,
    Middleware,
    ModelTurn,
    ScriptedModel,
    ToolCallRequest,
    ToolMessage,
    interrupt,
    tool,
)
from transcript import assert_valid_transcript, tool_results

transfers: list[int] = []


@tool
def transfer(amount: int, to: str) -> str:
    """Move money."""
    transfers.append(amount)
    return f"sent {amount} to {to}"


class BudgetGuard(Middleware):
    """Custom HITL: large transfers need a yes/no from a person; everything else runs."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.runs = 0

    def after_model(self, turn: ModelTurn) -> None:
        self.runs += 1
        for call in turn.calls:
            if call.name == "transfer" and call.args["amount"] > self.limit:
                answer = interrupt({"question": f"Allow a transfer of {call.args['amount']}?",
                                    "tool_call_id": call.id})
                if answer != "yes":
                    turn.reject(call, f"Refused by the budget owner: {answer}")


class CountingHook(Middleware):
    def __init__(self) -> None:
        self.runs = 0

    def after_model(self, turn: ModelTurn) -> None:
        self.runs += 1


@pytest.fixture(autouse=True)
def _reset() -> None:
    transfers.clear()


def test_custom_middleware_pauses_with_interrupt(stores: StoreFactory, entry: EntryPoint) -> None:
    before, guard = CountingHook(), BudgetGuard(limit=1000)
    script = [[{"name": "transfer", "args": {"amount": 50, "to": "a"}, "id": "t1"},
               {"name": "transfer", "args": {"amount": 5000, "to": "b"}, "id": "t2"},
               {"name": "transfer", "args": {"amount": 9000, "to": "c"}, "id": "t3"}], "done"]
    agent = Agent(model=ScriptedModel(script), tools=[transfer], middleware=[before, guard],
                  checkpointer=stores())
    r1 = entry.invoke(agent, "pay everyone", thread_id="m")
    assert r1.interrupted and r1.interrupts[0].kind == "input"
    assert r1.interrupts[0].value == {"question": "Allow a transfer of 5000?",
                                      "tool_call_id": "t2"}
    assert transfers == []
    r2 = entry.resume(agent, "m", value="yes")
    assert r2.interrupted and r2.interrupts[0].value["tool_call_id"] == "t3"
    r3 = entry.resume(agent, "m", value="too much")
    assert r3.status == "completed"
    assert sorted(transfers) == [50, 5000]
    results = tool_results(r3.messages)
    assert results["t3"].status == "error"
    assert results["t3"].content == "Refused by the budget owner: too much"
    assert_valid_transcript(r3.messages)
    # hooks before the pausing one ran once; the pausing hook ran again on each resume
    # (only when the same process kept the middleware objects, i.e. not necessary for
    # correctness, but observable here)
    assert before.runs == 1
    assert guard.runs == 3


def test_interrupt_inside_tool_answers_in_order(stores: StoreFactory, entry: EntryPoint) -> None:
    prologue: list[str] = []

    @tool
    def paint(room: str) -> str:
        """Paint a room after asking."""
        prologue.append(room)  # runs again on every resume: documented behaviour
        colour = interrupt({"question": f"Which colour for the {room}?"})
        finish = interrupt({"question": "Matte or gloss?"})
        return f"painted {room} {colour} ({finish})"

    script = [[{"name": "paint", "args": {"room": "kitchen"}, "id": "p1"}], "painted"]
    agent = Agent(model=ScriptedModel(script), tools=[paint], checkpointer=stores())
    r1 = entry.invoke(agent, "paint", thread_id="x")
    assert r1.interrupts[0].value == {"question": "Which colour for the kitchen?"}
    assert r1.interrupts[0].tool_call_id == "p1"
    r2 = entry.resume(agent, "x", value="蓝色")
    assert r2.interrupts[0].value == {"question": "Matte or gloss?"}
    r3 = entry.resume(agent, "x", value="matte")
    assert r3.output == "painted"
    assert tool_results(r3.messages)["p1"].content == "painted kitchen 蓝色 (matte)"
    assert prologue == ["kitchen"] * 3


def test_wrap_tool_call_composes_and_never_sees_rejected_calls(stores: StoreFactory) -> None:
    order: list[str] = []

    class Outer(Middleware):
        async def wrap_tool_call(self, request: ToolCallRequest, call_next: Any) -> ToolMessage:
            order.append(f"outer>{request.call.id}")
            result: ToolMessage = await call_next(request)
            order.append(f"outer<{request.call.id}")
            return result.model_copy(update={"content": result.content + " [audited]"})

    class Inner(Middleware):
        async def wrap_tool_call(self, request: ToolCallRequest, call_next: Any) -> ToolMessage:
            order.append(f"inner>{request.call.id}")
            return await call_next(request)  # type: ignore[no-any-return]

    script = [[{"name": "transfer", "args": {"amount": 1, "to": "a"}, "id": "ok"},
               {"name": "transfer", "args": {"amount": 2, "to": "b"}, "id": "no"}], "done"]
    agent = Agent(model=ScriptedModel(script), tools=[transfer],
                  middleware=[Outer(), HumanInTheLoop(interrupt_on={"transfer": True}), Inner()],
                  checkpointer=stores())
    agent.invoke("go", thread_id="w")
    done = agent.resume("w", [{"type": "approve"}, {"type": "reject"}])
    assert order == ["outer>ok", "inner>ok", "outer<ok"]
    assert transfers == [1]
    assert tool_results(done.messages)["ok"].content == "sent 1 to a [audited]"


def test_a_later_hook_cannot_unreject(stores: StoreFactory) -> None:
    class Deny(Middleware):
        def after_model(self, turn: ModelTurn) -> None:
            for c in turn.calls:
                turn.reject(c, "policy: transfers are frozen")

    class Permissive(Middleware):
        def after_model(self, turn: ModelTurn) -> None:
            for c in turn.calls:
                turn.auto_approve(c, rule="yolo")

    script = [[{"name": "transfer", "args": {"amount": 1, "to": "a"}, "id": "t"}], "ok"]
    agent = Agent(model=ScriptedModel(script), tools=[transfer],
                  middleware=[Deny(), Permissive()], checkpointer=stores())
    result = agent.invoke("go", thread_id="d")
    assert transfers == []
    assert tool_results(result.messages)["t"].content == "policy: transfers are frozen"


def test_interrupt_outside_agent_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="outside a tool or middleware"):
        interrupt("?")
