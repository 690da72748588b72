"""``@tool``: schemas from type hints, argument validation, sync/async, ToolContext."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from conftest import StoreFactory
from interlock import (
    Agent,
    AssistantMessage,
    ConfigurationError,
    HumanInTheLoop,
    ScriptedModel,
    ToolContext,
    ToolMessage,
    tool,
)


class Address(BaseModel):
    city: str
    zip: str


def test_schema_from_type_hints_and_docstring() -> None:
    @tool(idempotent=True)
    def ship(order_id: int, address: Address, speed: Literal["slow", "fast"] = "slow",
             note: str | None = None, ctx: ToolContext | None = None) -> str:
        """Ship an order to an address."""
        return "ok"

    assert ship.name == "ship" and ship.description == "Ship an order to an address."
    assert ship.idempotent is True
    schema = ship.args_schema
    assert schema["required"] == ["order_id", "address"]
    assert schema["properties"]["speed"]["enum"] == ["slow", "fast"]
    assert "ctx" not in schema["properties"]  # the ToolContext parameter is not an argument
    assert ship.validate_args({"order_id": "7", "address": {"city": "Hz", "zip": "310000"}})[
        "order_id"] == 7


def test_bad_tool_definitions() -> None:
    def f(*args: int) -> None:
        """Varargs."""

    with pytest.raises(ConfigurationError, match="declare every argument"):
        tool(f)
    with pytest.raises(ConfigurationError, match="letters, digits"):
        tool(name="bad name!")(lambda: None)


def test_invalid_args_and_tool_errors_become_error_results(stores: StoreFactory) -> None:
    @tool
    def divide(a: int, b: int) -> float:
        """Divide."""
        return a / b

    script = [[{"name": "divide", "args": {"a": "x", "b": 1}, "id": "c1"},
               {"name": "divide", "args": {"a": 1, "b": 0}, "id": "c2"},
               {"name": "divide", "args": {"a": 1, "b": 2, "c": 3}, "id": "c3"},
               {"name": "nope", "args": {}, "id": "c4"},
               {"name": "divide", "args": {"a": 9, "b": 3}, "id": "c5"}], "done"]
    agent = Agent(model=ScriptedModel(script), tools=[divide], checkpointer=stores())
    result = agent.invoke("compute", thread_id="t")
    assert result.output == "done"
    msgs = {m.tool_call_id: m for m in result.messages if isinstance(m, ToolMessage)}
    assert msgs["c1"].status == "error" and "Invalid arguments for tool 'divide'" in \
        msgs["c1"].content and "a:" in msgs["c1"].content
    assert msgs["c2"].status == "error" and "ZeroDivisionError" in msgs["c2"].content
    assert msgs["c3"].status == "error" and "c:" in msgs["c3"].content
    assert msgs["c4"].status == "error" and "does not exist" in msgs["c4"].content
    assert (msgs["c5"].status, msgs["c5"].content) == ("success", "3.0")


def test_sync_tools_run_in_a_worker_thread_async_tools_on_the_loop(
    stores: StoreFactory,
) -> None:
    where: dict[str, str] = {}

    @tool
    def sync_tool() -> str:
        """Sync."""
        where["sync"] = threading.current_thread().name
        return "s"

    @tool
    async def async_tool(n: int) -> dict[str, int]:
        """Async."""
        await asyncio.sleep(0)
        where["async"] = threading.current_thread().name
        return {"n": n * 2}

    script = [[{"name": "sync_tool", "args": {}, "id": "a"},
               {"name": "async_tool", "args": {"n": 21}, "id": "b"}], "ok"]
    agent = Agent(model=ScriptedModel(script), tools=[sync_tool, async_tool],
                  checkpointer=stores())
    result = agent.invoke("go", thread_id="t")
    msgs = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert [m.content for m in msgs] == ["s", '{"n": 42}']
    assert where["sync"].startswith("interlock-tool")
    assert where["async"] == threading.current_thread().name


def test_tool_context_is_injected_and_stable(stores: StoreFactory) -> None:
    seen: list[ToolContext] = []

    @tool
    def pay(amount: int, context: ToolContext) -> str:
        """Pay."""
        seen.append(context)
        return "paid"

    script = [[{"name": "pay", "args": {"amount": 5}, "id": "p1"},
               {"name": "pay", "args": {"amount": 6}, "id": "p2"}], "ok"]
    agent = Agent(model=ScriptedModel(script), tools=[pay], checkpointer=stores())
    agent.invoke("pay twice", thread_id="thr")
    assert [(c.thread_id, c.tool_call_id, c.attempt) for c in seen] == [
        ("thr", "p1", 1), ("thr", "p2", 1)]
    assert len({c.idempotency_key for c in seen}) == 2
    assert all(len(c.idempotency_key) == 32 for c in seen)
    from interlock._engine.texts import idempotency_key

    assert seen[0].idempotency_key == idempotency_key("thr", "p1")


def test_duplicate_tool_call_ids_from_the_model_are_made_unique(stores: StoreFactory) -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    # some OpenAI-compatible servers number calls per turn, reusing ids across turns; a call
    # repeated within one reply (same id, tool and arguments) is one call
    script = [[{"name": "ping", "args": {}, "id": "call_0"}],
              [{"name": "ping", "args": {}, "id": "call_0"},
               {"name": "ping", "args": {}, "id": "call_0"},
               {"name": "echo", "args": {"text": "a"}, "id": "call_1"},
               {"name": "echo", "args": {"text": "b"}, "id": "call_1"}], "done"]

    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    agent = Agent(model=ScriptedModel(script), tools=[ping, echo], checkpointer=stores())
    result = agent.invoke("go", thread_id="t")
    results = [(m.tool_call_id, m.content) for m in result.messages
               if isinstance(m, ToolMessage)]
    assert results == [("call_0", "pong"), ("call_0_2", "pong"), ("call_1", "a"),
                       ("call_1_2", "b")]
    turn = [m for m in result.messages if isinstance(m, AssistantMessage)][1]
    assert [c.id for c in turn.tool_calls] == ["call_0_2", "call_1", "call_1_2"]


def test_a_call_repeated_in_one_reply_is_asked_once_and_run_once(stores: StoreFactory) -> None:
    """The OpenAI Agents SDK's approval tests: the same call id proposed twice in one turn is
    one call (before, it was renamed, asked about and run twice: a duplicated side effect)."""
    runs: list[str] = []

    @tool
    def send(to: str) -> str:
        """Send a message."""
        runs.append(to)
        return f"sent to {to}"

    same = {"name": "send", "args": {"to": "bob"}, "id": "c1"}
    agent = Agent(model=ScriptedModel([[same, same], "done"]), tools=[send],
                  checkpointer=stores(), middleware=[HumanInTheLoop(interrupt_on={"send": True})])
    paused = agent.invoke("go", thread_id="t")
    (intr,) = paused.interrupts
    assert [a.tool_call_id for a in intr.value.action_requests] == ["c1"]
    done = agent.resume("t", [{"type": "approve"}])
    assert done.output == "done" and runs == ["bob"]
    assert [m.tool_call_id for m in done.messages if isinstance(m, ToolMessage)] == ["c1"]


def test_tool_call_ids_stay_unique_across_runs_agents_and_the_message_cache(
    stores: StoreFactory,
) -> None:
    """The ids a thread already holds are known whether this process cached its messages
    (counting only the new ones), another agent added messages since, or nothing is cached."""

    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    def script(messages: Any) -> Any:
        return ({"name": "ping", "args": {}, "id": "call_0"}
                if messages[-1].role == "user" else "done")

    store = stores()

    def agent(**kw: Any) -> Agent:
        return Agent(model=ScriptedModel(script), tools=[ping], checkpointer=store, **kw)

    a, b, uncached = agent(), agent(), agent(cached_threads=0)
    for runner in (a, a, a, b, a, uncached, a, b):
        assert runner.invoke("go", thread_id="t").output == "done"
    messages = a.get_thread("t").messages
    ids = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert ids == ["call_0", *(f"call_0_{n}" for n in range(2, 9))]
    assert sorted(e.tool_call_id for e in a.journal("t")) == sorted(ids)
