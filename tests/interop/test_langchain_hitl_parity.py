"""Code written for LangChain's HumanInTheLoopMiddleware, run on ``interlock.compat`` with only
its imports changed: what the reviewer sees, what runs and what the configuration reads like
match LangChain's."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool as lc_tool

from interlock.compat import Command, HumanInTheLoopMiddleware, InMemorySaver, create_agent


class ScriptedChat(FakeMessagesListChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


ran: list[str] = []


@lc_tool
def execute_sql(query: str) -> str:
    """Run SQL."""
    ran.append(query)
    return "ok"


def paused_on(config: dict[str, Any], query: str = "DROP TABLE users",
              thread_id: str = "t", call_id: str = "c1") -> Any:
    """Run an agent whose model calls ``execute_sql(query)`` once under ``config``."""
    ran.clear()
    model = ScriptedChat(responses=[
        AIMessage(content="", tool_calls=[{"name": "execute_sql", "args": {"query": query},
                                           "id": call_id}]),
        AIMessage(content="done")])
    agent = create_agent(model=model, tools=[execute_sql], checkpointer=InMemorySaver(),
                         middleware=[HumanInTheLoopMiddleware(
                             interrupt_on={"execute_sql": config})])
    return agent.invoke({"messages": [{"role": "user", "content": "go"}]},
                        {"configurable": {"thread_id": thread_id}}, version="v2")


# ---------------------------------------------------------------- description signatures


def describe_with_default(tool_call: Any, state: Any, runtime: Any = None) -> str:
    return (f"DBA approval needed for: {tool_call['args']['query']} "
            f"({len(state['messages'])} msgs so far)")


def describe_varargs(*args: Any) -> str:
    tool_call, _state, runtime = args
    return f"DBA approval needed for: {tool_call['args']['query']} on {runtime.thread_id}"


def describe_four(tool_call: Any, state: Any, runtime: Any, extra: str = "!") -> str:
    return f"DBA approval needed for: {tool_call['args']['query']}{extra}"


def test_langchain_description_with_a_default_or_varargs_is_called_the_langchain_way() -> None:
    out = paused_on({"allowed_decisions": ["approve", "reject"],
                     "description": describe_with_default})
    assert out.interrupts[0].value["action_requests"][0]["description"] == \
        "DBA approval needed for: DROP TABLE users (2 msgs so far)"
    out = paused_on({"allowed_decisions": ["approve", "reject"],
                     "description": describe_varargs}, thread_id="prod")
    assert out.interrupts[0].value["action_requests"][0]["description"] == \
        "DBA approval needed for: DROP TABLE users on prod"
    out = paused_on({"allowed_decisions": ["approve"], "description": describe_four})
    assert out.interrupts[0].value["action_requests"][0]["description"] == \
        "DBA approval needed for: DROP TABLE users!"
    assert ran == []


def test_two_argument_description_stays_interlocks_form() -> None:
    def native(call: Any, turn: Any = None) -> str:
        return f"native {call.name} {call.args['query']}"

    out = paused_on({"allowed_decisions": ["approve"], "description": native})
    assert out.interrupts[0].value["action_requests"][0]["description"] == \
        "native execute_sql DROP TABLE users"


# ---------------------------------------------------------------- `when` reads the request


def test_when_written_for_langchains_tool_call_request_decides_as_written() -> None:
    """Predicates reading ``request.runtime.config``, ``request.runtime.tool_call_id`` and
    ``request.tool`` decide; none of them raises (which would pause every call)."""
    from langchain_core.tools import BaseTool

    seen: list[Any] = []

    def on_prod(req: Any) -> bool:
        return bool(req.runtime.config["configurable"]["thread_id"] == "prod")

    def danger_id(req: Any) -> bool:
        return bool(req.runtime.tool_call_id.startswith("danger"))

    def by_tool(req: Any) -> bool:
        seen.append(req.tool)
        return req.tool is not None and req.tool.name == "x"

    def by_runtime_state(req: Any) -> bool:
        return len(req.runtime.state["messages"]) > 5

    for when in (on_prod, danger_id, by_tool, by_runtime_state):
        out = paused_on({"allowed_decisions": ["approve", "reject"], "when": when},
                        thread_id="dev", call_id="c1")
        assert out.interrupts == (), when.__name__
        assert ran == ["DROP TABLE users"], when.__name__
    [tool] = seen
    assert isinstance(tool, BaseTool) and tool.name == "execute_sql"

    out = paused_on({"allowed_decisions": ["approve"], "when": on_prod}, thread_id="prod")
    [action] = out.interrupts[0].value["action_requests"]
    assert action.get("reason") is None and ran == []
    out = paused_on({"allowed_decisions": ["approve"], "when": danger_id}, call_id="danger-1")
    assert len(out.interrupts) == 1 and ran == []


# ---------------------------------------------------------------- Command and interrupt_on


def test_command_with_update_or_goto_says_what_interlock_supports_and_changes_nothing(
) -> None:
    import pytest

    from interlock import ConfigurationError
    from interlock.compat import Command

    out = paused_on({"allowed_decisions": ["approve", "reject"]})
    assert len(out.interrupts) == 1
    for kwargs in ({"resume": {"decisions": [{"type": "approve"}]},
                    "update": {"messages": []}},
                   {"goto": "__end__"}, {"graph": "__parent__", "resume": 1}):
        with pytest.raises(ConfigurationError, match=r"supports only resume=\.\.\..*"
                                                     r"agent\.cancel\(thread_id\)"):
            Command(**kwargs)
    with pytest.raises(ConfigurationError, match=r"Command\(\) needs resume="):
        Command()
    assert ran == []
    assert Command(resume=1, goto=()) == Command(resume=1) == Command(1)


def test_interrupt_on_attribute_reads_like_langchains() -> None:
    from langchain.agents.middleware import HumanInTheLoopMiddleware as LangChainHITL

    sql = {"allowed_decisions": ["approve", "reject"], "description": "SQL"}
    config: dict[str, Any] = {"write_file": True, "read_file": False, "execute_sql": sql}
    ours = HumanInTheLoopMiddleware(interrupt_on=config).interrupt_on
    assert ours == LangChainHITL(interrupt_on=config).interrupt_on
    assert ours == {"write_file": {"allowed_decisions": ["approve", "edit", "reject",
                                                         "respond"]},
                    "execute_sql": sql}
    # the policy in force is unchanged
    hitl = HumanInTheLoopMiddleware(interrupt_on=config)
    assert hitl.config_for("read_file") is None
    assert list(hitl.config_for("write_file").allowed_decisions) == [  # type: ignore[union-attr]
        "approve", "edit", "reject", "respond"]


# ---------------------------------------------------------------- per_call requests

sent: list[str] = []


@lc_tool
def send_email(to: str, body: str) -> str:
    """Send an e-mail."""
    sent.append(to)
    return "sent"


@lc_tool
def delete_file(path: str) -> str:
    """Delete a file."""
    ran.append(path)
    return "deleted"


def test_per_call_requests_read_and_answer_as_langchains_tool_approval_requests() -> None:
    # LangChain 1.5's own per_call example, imports changed
    ran.clear()
    sent.clear()
    model = ScriptedChat(responses=[
        AIMessage(content="", tool_calls=[
            {"name": "send_email", "args": {"to": "alice@example.com", "body": "hi"},
             "id": "e1"},
            {"name": "delete_file", "args": {"path": "report.txt"}, "id": "d1"}]),
        AIMessage(content="done")])
    agent = create_agent(
        model=model, tools=[send_email, delete_file], checkpointer=InMemorySaver(),
        middleware=[HumanInTheLoopMiddleware(
            interrupt_on={"send_email": True,
                          "delete_file": {"allowed_decisions": ["approve", "reject"]}},
            interrupt_mode="per_call")])
    config = {"configurable": {"thread_id": "2"}}
    result = agent.invoke(
        {"messages": [{"role": "user", "content": "Email Alice, then delete the report."}]},
        config, version="v2")
    assert [i.value["type"] for i in result.interrupts] == ["tool_approval"] * 2
    assert [(i.value["tool_call_id"], i.value["name"], i.value["args"])
            for i in result.interrupts] == [
        ("e1", "send_email", {"to": "alice@example.com", "body": "hi"}),
        ("d1", "delete_file", {"path": "report.txt"})]
    assert all(isinstance(i.value["description"], str) and i.value["description"]
               for i in result.interrupts)
    answers = {}
    for interrupt in result.interrupts:
        if interrupt.value["name"] == "delete_file":
            answers[interrupt.id] = {"type": "reject", "message": "Keep the report."}
        else:
            answers[interrupt.id] = {"type": "approve"}
    out = agent.invoke(Command(resume=answers), config, version="v2")
    assert out.interrupts == ()
    assert sent == ["alice@example.com"] and ran == []
