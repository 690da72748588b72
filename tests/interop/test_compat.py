"""``interlock.compat``: LangChain's entry points and LangGraph's result shapes."""

from __future__ import annotations

import asyncio

import pytest

from interlock import Agent, ConfigurationError, ScriptedModel, tool
from interlock.compat import (
    Command,
    GraphOutput,
    HumanInTheLoopMiddleware,
    InMemorySaver,
    create_agent,
)


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def make() -> object:
    return create_agent(
        model=ScriptedModel([{"name": "delete_file", "args": {"path": "/a"}}, "done"]),
        tools=[delete_file], system_prompt="Be careful.",
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"delete_file": True})],
        checkpointer=InMemorySaver())


def test_v1_state_dict_with_interrupts_then_resume() -> None:
    agent = make()
    config = {"configurable": {"thread_id": "t"}}
    state = agent.invoke({"messages": [{"role": "user", "content": "rm"}]}, config)  # type: ignore[attr-defined]
    [intr] = state["__interrupt__"]
    assert intr.value["action_requests"][0]["args"] == {"path": "/a"}  # plain JSON
    assert [m.role for m in state["messages"]] == ["user", "assistant"]
    assert agent.agent.system_prompt == "Be careful."  # type: ignore[attr-defined]
    state = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)  # type: ignore[attr-defined]
    assert "__interrupt__" not in state
    assert state["messages"][-1].content == "done"
    assert isinstance(agent.agent, Agent)  # type: ignore[attr-defined]


def test_v2_output_and_async() -> None:
    agent = make()

    async def go() -> GraphOutput:
        out = await agent.ainvoke("rm", {"configurable": {"thread_id": "t"}},  # type: ignore[attr-defined]
                                  version="v2")
        assert isinstance(out, GraphOutput)
        return out

    out = asyncio.run(go())
    assert out.interrupts[0].value["review_configs"][0]["action_name"] == "delete_file"
    assert out.value["messages"][-1].tool_calls[0].name == "delete_file"


def test_clear_errors() -> None:
    agent = make()
    with pytest.raises(ConfigurationError, match="thread_id"):
        agent.invoke("rm", {})  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match="'v1' or 'v2'"):
        agent.invoke("rm", {"configurable": {"thread_id": "t"}}, version="v3")  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match="response_format"):
        create_agent(model=ScriptedModel(["x"]), tools=[], response_format=dict)
