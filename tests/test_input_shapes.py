"""The message shorthands LangGraph accepts in ``invoke`` input: a bare string under
``"messages"`` is one user message, a ``("role", "content")`` pair is one message of that role
(LangChain's role names: user/human, assistant/ai, system/developer), and a dict may name its
role with LangChain's ``type``. Anything else is a ``ConfigurationError`` that stores nothing."""

from __future__ import annotations

from typing import Any

import pytest

from interlock import Agent, ConfigurationError, ScriptedModel, ThreadNotFound


def seen_by_model(value: Any, thread_id: str = "t") -> list[tuple[str, str]]:
    model = ScriptedModel(lambda messages: "ok")
    agent = Agent(model=model, tools=[])
    agent.invoke(value, thread_id=thread_id)
    return [(m.role, m.content) for m in model.calls[0]]


@pytest.mark.parametrize(("value", "expected"), [
    ({"messages": "hi"}, [("user", "hi")]),
    ({"messages": [("system", "Answer in French."), ("user", "hi")]},
     [("system", "Answer in French."), ("user", "hi")]),
    ({"messages": [("human", "hi"), ("ai", "bonjour"), ("developer", "Be brief."),
                   ("assistant", "ok"), ["user", "again"]]},
     [("user", "hi"), ("assistant", "bonjour"), ("system", "Be brief."), ("assistant", "ok"),
      ("user", "again")]),
    ({"messages": ("user", "hi")}, [("user", "hi")]),
    (("system", "Be brief."), [("system", "Be brief.")]),
    ({"messages": ["first", "second"]}, [("user", "first"), ("user", "second")]),
    ({"messages": [{"type": "human", "content": "hi"}, {"role": "ai", "content": "yes"},
                   {"role": "user", "content": "and?"}]},
     [("user", "hi"), ("assistant", "yes"), ("user", "and?")]),
])
def test_langgraph_message_shorthands_reach_the_model_as_written(
        value: Any, expected: list[tuple[str, str]]) -> None:
    assert seen_by_model(value) == expected


@pytest.mark.parametrize(("value", "says"), [
    ({"messages": [("boss", "do it")]}, "role 'boss' is not one of"),
    ({"messages": [("tool", "42")]}, "a tool message needs its tool_call_id"),
    ({"messages": [("user", "a", "b")]}, "Cannot use tuple ('user', 'a', 'b')"),
    ({"messages": [[("user", "nested")]]}, "Cannot use list"),
    ({"messages": None}, "Cannot use NoneType None"),
    ({"messages": [{"role": "user"}]}, "content: Field required"),
    ({"messages": [{"content": "no role"}]}, "its role None is not one of"),
    ({"messages": [1]}, "Cannot use int 1 as input message 1"),
])
def test_other_input_is_refused_clearly_and_stores_nothing(value: Any, says: str) -> None:
    model = ScriptedModel(["ok"])
    agent = Agent(model=model, tools=[])
    with pytest.raises(ConfigurationError) as caught:
        agent.invoke(value, thread_id="bad")
    assert says in str(caught.value)
    # names the accepted shapes, or the one way to write what was meant
    assert "('role', 'content') pair" in str(caught.value) or "write it as" in str(caught.value)
    assert model.calls == []
    with pytest.raises(ThreadNotFound):
        agent.get_thread("bad")


def test_compat_agent_reads_the_shorthands_as_langgraph_does() -> None:
    from interlock.compat import create_agent

    model = ScriptedModel(["ok", "ok"])
    agent = create_agent(model=model, tools=[])
    out = agent.invoke({"messages": [("system", "Answer in French."), ("user", "hi")]},
                       {"configurable": {"thread_id": "a"}})
    assert [(m.type, m.content) for m in out["messages"]] == [
        ("system", "Answer in French."), ("human", "hi"), ("ai", "ok")]
    out = agent.invoke({"messages": "hi"}, {"configurable": {"thread_id": "b"}})
    assert [(m.type, m.content) for m in out["messages"]] == [("human", "hi"), ("ai", "ok")]
