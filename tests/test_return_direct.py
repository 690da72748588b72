"""``return_direct`` tools (LangChain's): when every call of a model turn is of such a tool,
the run ends with their results and the model is not called again — also when the calls
were paused for review, and decided by the rule LangChain's ``create_agent`` applies."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from conftest import StoreFactory, require_postgres
from interlock import Agent, HumanInTheLoop, RunResult, ScriptedModel, ToolMessage, tool
from interlock.server.hub import Hub
from interlock.server.runner import Runner
from interlock.worker import Worker


class Tools:
    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

        @tool(return_direct=True)
        def lookup_order(order_id: str) -> str:
            """Look an order up; its status is the answer."""
            self.ran.append(("lookup_order", {"order_id": order_id}))
            return f"Order {order_id}: shipped"

        @tool
        def note(text: str) -> str:
            """Keep a note."""
            self.ran.append(("note", {"text": text}))
            return "noted"

        self.all = [lookup_order, note]


def _agent(script: list[Any], store: Any, gated: bool = False) -> tuple[Agent, Tools,
                                                                       ScriptedModel]:
    tools = Tools()
    model = ScriptedModel(script)
    mw = [HumanInTheLoop(interrupt_on={"lookup_order": True})] if gated else []
    return Agent(model=model, tools=tools.all, checkpointer=store, middleware=mw), tools, model


def _lookup(cid: str) -> dict[str, Any]:
    return {"name": "lookup_order", "args": {"order_id": "A7"}, "id": cid}


def test_the_result_is_the_answer(stores: StoreFactory) -> None:
    agent, tools, model = _agent([[_lookup("c1")], "never asked", "after"], stores())
    done = agent.invoke("where is A7?", thread_id="t")
    assert done.status == "completed" and done.output == "Order A7: shipped"
    assert model.call_count == 1 and tools.ran == [("lookup_order", {"order_id": "A7"})]
    assert isinstance(done.messages[-1], ToolMessage)
    # the thread is complete: a new message asks the model again, with the result in view
    again = agent.invoke("thanks", thread_id="t")
    assert again.output == "never asked" and model.call_count == 2
    assert [type(m).__name__ for m in model.calls[1]][-2:] == ["ToolMessage", "UserMessage"]


def _outcome(agent: Agent, thread_id: str) -> str:
    """The outcome on the thread's row, as the inbox lists it."""
    return next(r.outcome for r in agent.list_threads() if r.thread_id == thread_id)


def test_the_listed_outcome_is_the_answer(stores: StoreFactory) -> None:
    """The thread's listed outcome (the inbox's row and card) is the answer the run gave,
    also when a tool gave it; a new message clears it until the model answers."""
    agent, _, _ = _agent([[_lookup("c1")], "Anything else?"], stores(), gated=True)
    agent.invoke("where is A7?", thread_id="t")
    assert _outcome(agent, "t") == ""
    agent.resume("t", [{"type": "approve"}])
    assert _outcome(agent, "t") == "Order A7: shipped"
    agent.invoke("thanks", thread_id="t")
    assert _outcome(agent, "t") == "Anything else?"


def test_a_turn_with_another_tool_goes_back_to_the_model(stores: StoreFactory) -> None:
    script = [[_lookup("c1"), {"name": "note", "args": {"text": "x"}, "id": "c2"}], "summary"]
    agent, tools, model = _agent(script, stores())
    done = agent.invoke("go", thread_id="t")
    assert done.output == "summary" and model.call_count == 2
    assert len(tools.ran) == 2


def test_a_reviewed_call_ends_the_run_once_decided(stores: StoreFactory) -> None:
    store = stores()
    agent, tools, model = _agent([[_lookup("c1")], "never asked"], store, gated=True)
    paused = agent.invoke("where is A7?", thread_id="ok")
    assert paused.interrupted and tools.ran == []
    done = agent.resume("ok", [{"type": "approve"}])
    assert done.status == "completed" and done.output == "Order A7: shipped"
    assert model.call_count == 1 and len(tools.ran) == 1
    assert agent.get_thread("ok").status == "completed"

    # rejected: LangChain's rule ends the run too; the rejection is the last word
    agent, tools, model = _agent([[_lookup("c1")], "never asked"], store, gated=True)
    agent.invoke("where is A7?", thread_id="no")
    done = agent.resume("no", [{"type": "reject", "message": "not now"}])
    assert done.status == "completed" and "not now" in (done.output or "")
    assert model.call_count == 1 and tools.ran == []


def test_langchain_tools_keep_return_direct_and_end_as_langchain_ends() -> None:
    """The same script through LangChain's own ``create_agent`` and through interlock with
    the LangChain tool: the run ends after the tool on both, with the same messages."""
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool as lc_tool

    from interlock.integrations.langchain import LangChainTool
    from interop.test_langchain import ToolCallingFake

    ran: list[str] = []

    @lc_tool(return_direct=True)
    def lookup_order(order_id: str) -> str:
        """Look an order up; its status is the answer."""
        ran.append(order_id)
        return f"Order {order_id}: shipped"

    call = {"id": "c1", "name": "lookup_order", "args": {"order_id": "A7"},
            "type": "tool_call"}

    def replies() -> list[AIMessage]:
        return [AIMessage(content="", tool_calls=[call]), AIMessage(content="never asked")]

    lc_model = ToolCallingFake(responses=replies())
    lc_out = create_agent(lc_model, [lookup_order]).invoke(
        {"messages": [{"role": "user", "content": "where is A7?"}]})
    assert [m.type for m in lc_out["messages"]] == ["human", "ai", "tool"]

    wrapped = LangChainTool(lookup_order)
    assert wrapped.return_direct
    model = ScriptedModel([[{"id": "c1", "name": "lookup_order", "args": {"order_id": "A7"}}],
                           "never asked"])
    done = Agent(model=model, tools=[wrapped]).invoke("where is A7?", thread_id="t")
    assert [m.role for m in done.messages] == ["user", "assistant", "tool"]
    assert done.output == lc_out["messages"][-1].content == "Order A7: shipped"
    assert ran == ["A7", "A7"] and model.call_count == 1


def test_a_sub_agent_ending_with_a_return_direct_result_answers_its_parent(
        stores: StoreFactory) -> None:
    """A sub-agent whose run ended with a ``return_direct`` result has answered: its parent
    gets that result (paused first for review in the child) and goes on."""
    store = stores()
    tools = Tools()
    child = Agent(name="orders", model=ScriptedModel([[_lookup("c1")], "never asked"]),
                  tools=tools.all, checkpointer=store,
                  middleware=[HumanInTheLoop(interrupt_on={"lookup_order": True})])
    parent_model = ScriptedModel([[{"name": "orders", "args": {"task": "A7?"}, "id": "p1"}],
                                  "The order is shipped."])
    parent = Agent(name="boss", model=parent_model, tools=[child.as_tool()],
                   checkpointer=store)
    paused = parent.invoke("where is A7?", thread_id="p")
    [intr] = paused.interrupts
    assert intr.path is not None and tools.ran == []
    done = parent.resume("p", [{"type": "approve"}], interrupt_id=intr.id)
    assert done.status == "completed" and done.output == "The order is shipped."
    result = next(m for m in done.messages if isinstance(m, ToolMessage))
    assert result.content == "Order A7: shipped" and len(tools.ran) == 1


@pytest.mark.postgres
def test_a_handed_off_run_reports_the_return_direct_result(tmp_path: Path) -> None:
    """An API-only server hands the run to a worker and follows the thread: the result it
    reports is the ``return_direct`` tool's, as when it runs the agent itself."""
    require_postgres()
    pg = StoreFactory("postgres", tmp_path)
    try:
        api_agent, _, _ = _agent([[_lookup("c1")], "never asked"], pg())
        work_agent, tools, model = _agent([[_lookup("c1")], "never asked"], pg())
        worker = Worker(work_agent)

        async def main() -> RunResult | None:
            runner = Runner(api_agent, Hub(), lambda: None, handoff=True, follow_interval=0.05)
            # stored and queued; the server follows the thread in a task of its own
            assert await runner.start("h", "where is A7?", reviewer=None, wait=False) is None
            (following,) = runner.tasks
            assert await worker.run_once() == 1
            return await following

        result = asyncio.run(main())
        assert result is not None and result.status == "completed"
        assert result.output == "Order A7: shipped"
        # the row the inbox lists, written by the worker, says the same
        assert _outcome(api_agent, "h") == "Order A7: shipped"
        assert model.call_count == 1 and len(tools.ran) == 1
    finally:
        pg.cleanup()
