"""``interlock.compat``: LangChain's entry points and LangGraph's result shapes."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import AIMessage, HumanMessage

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
    # LangChain messages, as LangChain's own agent returns them
    assert [m.type for m in state["messages"]] == ["human", "ai"]
    assert isinstance(state["messages"][-1], AIMessage)
    assert state["messages"][-1].tool_calls[0]["name"] == "delete_file"
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
    assert out.value["messages"][-1].tool_calls[0]["name"] == "delete_file"


def test_clear_errors() -> None:
    agent = make()
    with pytest.raises(ConfigurationError, match="thread_id"):
        agent.invoke("rm", {})  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match="'v1' or 'v2'"):
        agent.invoke("rm", {"configurable": {"thread_id": "t"}}, version="v3")  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match="response_format"):
        create_agent(model=ScriptedModel(["x"]), tools=[], response_format=dict)


def test_stream_get_state_and_langchain_messages_in() -> None:
    agent = make()
    config = {"configurable": {"thread_id": "s"}}
    updates = list(agent.stream(  # type: ignore[attr-defined]
        {"messages": [HumanMessage(content="rm")]}, config, stream_mode="updates"))
    assert [list(u) for u in updates] == [["model"], ["__interrupt__"]]
    (intr,) = updates[1]["__interrupt__"]
    assert intr.value["action_requests"][0]["name"] == "delete_file"
    snap = agent.get_state(config)  # type: ignore[attr-defined]
    assert snap.next == ("tools",) and len(snap.interrupts) == 1
    assert [m.type for m in snap.values["messages"]] == ["human", "ai"]
    assert snap.values["messages"][0].content == "rm"  # the LangChain message was taken
    snap = asyncio.run(agent.aget_state(config))  # type: ignore[attr-defined]
    assert snap.interrupts[0].value == intr.value

    pairs = list(agent.stream(  # type: ignore[attr-defined]
        Command(resume={"decisions": [{"type": "approve"}]}), config,
        stream_mode=["values", "messages"]))
    modes = [mode for mode, _ in pairs]
    assert set(modes) == {"values", "messages"}
    tool_msgs = [c[0] for mode, c in pairs if mode == "messages" and c[1]["langgraph_node"]
                 == "tools"]
    assert [m.content for m in tool_msgs] == ["deleted /a"]
    final = [c for mode, c in pairs if mode == "values"][-1]
    assert final["messages"][-1].text == "done" and "__interrupt__" not in final
    assert agent.get_state(config).next == ()  # type: ignore[attr-defined]


def test_update_state_and_unknown_modes_say_what_to_use() -> None:
    agent = make()
    config = {"configurable": {"thread_id": "u"}}
    with pytest.raises(ConfigurationError, match=r"Command\(resume=") as e:
        agent.update_state(config, {"messages": []})  # type: ignore[attr-defined]
    assert "cancel" in str(e.value)
    with pytest.raises(ConfigurationError, match=r"stream_mode.*debug"):
        list(agent.stream("rm", config, stream_mode="debug"))  # type: ignore[attr-defined]


def test_tool_call_reads_as_a_mapping() -> None:
    from interlock import ToolCall

    call = ToolCall(id="c1", name="delete_file", args={"path": "/a"})
    assert (call["name"], call["args"], call["id"], call["type"]) == (
        "delete_file", {"path": "/a"}, "c1", "tool_call")
    assert call.get("nope") is None
    with pytest.raises(KeyError):
        call["nope"]


def test_langchain_style_callables_read_langchain_messages() -> None:
    """A ``description`` written ``(tool_call, state, runtime)`` and a ``when`` reading
    ``request.state["messages"]``, as in LangChain's guides, get LangChain message objects
    from ``create_agent``; the same callables on a plain ``Agent`` get interlock's."""
    from langchain_core.messages import BaseMessage

    from interlock import AssistantMessage, HumanInTheLoop, InterruptOn

    seen: list[list[type]] = []

    def describe(tool_call: dict[str, object], state: dict[str, list[object]],
                 runtime: object) -> str:
        last = state["messages"][-1]
        seen.append([type(m) for m in state["messages"]])
        if isinstance(last, AIMessage):
            return f"{last.type} asks for {last.tool_calls[0]['name']} after " \
                   f"{state['messages'][0].content!r}"  # type: ignore[attr-defined]
        return f"interlock message {type(last).__name__}"

    def when(request: object) -> bool:
        messages = request.state["messages"]  # type: ignore[attr-defined]
        seen.append([type(m) for m in messages])
        return True

    def policy() -> HumanInTheLoop:
        return HumanInTheLoopMiddleware(interrupt_on={"delete_file": InterruptOn(
            description=describe, when=when)})

    def script() -> ScriptedModel:
        return ScriptedModel([{"name": "delete_file", "args": {"path": "/a"}}, "done"])

    lc = create_agent(model=script(), tools=[delete_file], middleware=[policy()],
                      checkpointer=InMemorySaver())
    out = lc.invoke({"messages": [{"role": "user", "content": "tidy up"}]},
                    config={"configurable": {"thread_id": "lc"}})
    (intr,) = out["__interrupt__"]
    assert intr.value["action_requests"][0]["description"] == \
        "ai asks for delete_file after 'tidy up'"
    assert seen == [[HumanMessage, AIMessage]] * 2  # when, then the description
    assert all(issubclass(t, BaseMessage) for t in seen[0])

    seen.clear()
    plain = Agent(model=script(), tools=[delete_file], middleware=[policy()])
    paused = plain.invoke("tidy up", thread_id="plain")
    assert paused.interrupts[0].value.action_requests[0].description == \
        "interlock message AssistantMessage"
    assert seen[0][-1] is AssistantMessage
