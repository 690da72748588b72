"""LangChain tools and chat models in an interlock agent: the same review cycle as with native
tools and models, ToolException handling, sync/async tools, streaming, usage, conversions."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    FakeMessagesListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage
from langchain_core.messages import ToolMessage as LCToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, ToolException
from langchain_core.tools import tool as lc_tool
from langgraph.types import Command
from pydantic import Field

from interlock import (
    Agent,
    AssistantMessage,
    ConfigurationError,
    HumanInTheLoop,
    InterruptOn,
    InvalidDecision,
    MemoryCheckpointer,
    Message,
    ModelTextDelta,
    RunCompleted,
    ScriptedModel,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    tool,
)
from interlock.integrations.langchain import LangChainTool, from_langchain, to_langchain
from transcript import assert_valid_transcript

ORIGINAL = "DELETE FROM records WHERE created_at < '2020-01-01'"
EDITED = "DELETE FROM records WHERE created_at < '2019-01-01'"
EMAIL = {"to": "dba@example.com", "body": "旧记录已删除"}


class ToolCallingFake(FakeMessagesListChatModel):
    """langchain-core's fake chat model; like LangChain's own agent tests, binding tools
    returns the model itself (the scripted replies already hold the tool calls)."""

    bound: list[Any] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.bound = list(tools)
        return self


class StreamingFake(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def calls(*items: tuple[str, str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": cid, "name": name, "args": args, "type": "tool_call"}
            for cid, name, args in items]


TURN_1 = calls(("c1", "execute_sql", {"query": ORIGINAL}), ("c2", "read_data", {"table": "records"}),
               ("c3", "send_email", EMAIL))
TURN_2 = calls(("c4", "execute_sql", {"query": "VACUUM"}))
SCRIPT: list[tuple[str, list[dict[str, Any]]]] = [
    ("我来处理。", TURN_1), ("", TURN_2), ("完成。", []),
]


def native_side(ran: list[tuple[str, dict[str, Any]]]) -> tuple[Any, list[Any]]:
    @tool
    def execute_sql(query: str) -> str:
        """Run a SQL statement against the orders database."""
        ran.append(("execute_sql", {"query": query}))
        return "OK, 42 rows affected"

    @tool
    async def read_data(table: str) -> str:
        """Read rows from a table."""
        ran.append(("read_data", {"table": table}))
        return f"[{table}: 3 rows]"

    @tool
    def send_email(to: str, body: str) -> str:
        """Send an e-mail."""
        ran.append(("send_email", {"to": to, "body": body}))
        return "sent"

    model = ScriptedModel([(text, [{"id": c["id"], "name": c["name"], "args": c["args"]}
                                   for c in cs]) if cs else text for text, cs in SCRIPT])
    return model, [execute_sql, read_data, send_email]


def langchain_side(ran: list[tuple[str, dict[str, Any]]]) -> tuple[Any, list[Any]]:
    @lc_tool
    def execute_sql(query: str) -> str:
        """Run a SQL statement against the orders database."""
        ran.append(("execute_sql", {"query": query}))
        return "OK, 42 rows affected"

    async def read(table: str) -> str:
        ran.append(("read_data", {"table": table}))
        return f"[{table}: 3 rows]"

    read_data = StructuredTool.from_function(coroutine=read, name="read_data",
                                             description="Read rows from a table.")

    def send(to: str, body: str) -> str:
        ran.append(("send_email", {"to": to, "body": body}))
        return "sent"

    send_email = StructuredTool.from_function(send, name="send_email",
                                              description="Send an e-mail.")
    model = ToolCallingFake(responses=[AIMessage(content=text, tool_calls=cs)
                                       for text, cs in SCRIPT])
    return model, [execute_sql, read_data, send_email]


def run_cycle(side: Any, mode: str) -> tuple[list[Message], list[tuple[str, dict[str, Any]]],
                                               list[Any]]:
    ran: list[tuple[str, dict[str, Any]]] = []
    model, tools = side(ran)
    agent = Agent(model=model, tools=tools, checkpointer=MemoryCheckpointer(),
                  middleware=[HumanInTheLoop(interrupt_on={
                      "execute_sql": True, "send_email": True, "read_data": False})])
    requests: list[Any] = []

    def go(input: Any) -> Any:
        if mode == "invoke":
            return agent.invoke(input, thread_id="t") if isinstance(input, str) else \
                agent.resume("t", input)

        async def stream() -> Any:
            from interlock import Command
            arg = input if isinstance(input, str) else Command(resume={"decisions": input})
            result = None
            async for event in agent.astream(arg, thread_id="t"):
                if isinstance(event, RunCompleted):
                    result = event.result
            return result
        return asyncio.run(stream())

    result = go("清理旧记录并通知 DBA")
    assert result.interrupted
    requests.append([(a.tool_call_id, a.name, a.args) for a in
                     result.interrupts[0].value.action_requests])
    assert ran == [("read_data", {"table": "records"})]  # the ungated call ran at once
    result = go([{"type": "edit", "edited_action": {"name": "execute_sql",
                                                    "args": {"query": EDITED}}},
                 {"type": "reject", "message": "不要发邮件"}])
    assert result.interrupted
    requests.append([(a.tool_call_id, a.name, a.args) for a in
                     result.interrupts[0].value.action_requests])
    result = go([{"type": "approve"}])
    assert result.status == "completed"
    return result.messages, ran, requests


@pytest.mark.parametrize("mode", ["invoke", "stream"])
def test_langchain_tools_and_model_give_the_native_transcript(mode: str) -> None:
    native = run_cycle(native_side, mode)
    lc = run_cycle(langchain_side, mode)
    native_messages, native_ran, native_requests = native
    lc_messages, lc_ran, lc_requests = lc
    assert lc_requests == native_requests == [
        [("c1", "execute_sql", {"query": ORIGINAL}), ("c3", "send_email", EMAIL)],
        [("c4", "execute_sql", {"query": "VACUUM"})],
    ]
    assert lc_ran == native_ran == [("read_data", {"table": "records"}),
                                    ("execute_sql", {"query": EDITED}),
                                    ("execute_sql", {"query": "VACUUM"})]
    assert [m.model_dump() for m in lc_messages] == [m.model_dump() for m in native_messages]
    assert_valid_transcript(lc_messages)
    by_id = {m.tool_call_id: m for m in lc_messages if isinstance(m, ToolMessage)}
    assert by_id["c1"].decision == "edit" and EDITED in by_id["c1"].content
    assert by_id["c3"].status == "error" and "不要发邮件" in by_id["c3"].content
    assert lc_messages[-1] == AssistantMessage(content="完成。")


def test_tool_name_description_and_schema_are_kept() -> None:
    @lc_tool("lookup-order", parse_docstring=True)
    def lookup(order_id: int, verbose: bool = False) -> str:
        """Look up an order.

        Args:
            order_id: The order number.
            verbose: Include the order lines.
        """
        return f"order {order_id}"

    t = LangChainTool(lookup)
    assert t.name == "lookup-order"
    assert t.description == "Look up an order."
    assert t.args_schema["required"] == ["order_id"]
    assert t.args_schema["properties"]["order_id"]["type"] == "integer"
    assert t.args_schema["properties"]["order_id"]["description"] == "The order number."
    model = ToolCallingFake(responses=[AIMessage(content="x")])
    agent = Agent(model=model, tools=[lookup])
    agent.invoke("hi", thread_id="t")
    assert model.bound == [lookup]  # the original tool object is bound


def test_tool_exception_handling_and_argument_validation() -> None:
    def fail(table: str) -> str:
        raise ToolException(f"table {table} does not exist")

    handled = StructuredTool.from_function(fail, name="handled", description="fails",
                                           handle_tool_error=True)
    raised = StructuredTool.from_function(fail, name="raised", description="fails")
    worded = StructuredTool.from_function(fail, name="worded", description="fails",
                                          handle_tool_error="Try another table.")
    model = ToolCallingFake(responses=[
        AIMessage(content="", tool_calls=calls(("a", "handled", {"table": "x"}),
                                               ("b", "raised", {"table": "y"}),
                                               ("c", "worded", {"table": "z"}),
                                               ("d", "handled", {"table": 5, "extra": 1}))),
        AIMessage(content="sorry"),
    ])
    agent = Agent(model=model, tools=[handled, raised, worded],
                  middleware=[HumanInTheLoop(interrupt_on={"raised": True})])
    result = agent.invoke("go", thread_id="t")
    # a reviewer's edit is checked against the LangChain tool's own schema before storing
    with pytest.raises(InvalidDecision, match="table: Input should be a valid string"):
        agent.resume("t", [{"type": "edit", "edited_action": {"name": "raised",
                                                              "args": {"table": 7}}}])
    result = agent.resume("t", [{"type": "approve"}])
    results = {m.tool_call_id: m for m in result.messages if isinstance(m, ToolMessage)}
    assert (results["a"].status, results["a"].content) == ("error", "table x does not exist")
    assert results["b"].status == "error"
    assert results["b"].content == "Tool 'raised' failed: ToolException: table y does not exist"
    assert (results["c"].status, results["c"].content) == ("error", "Try another table.")
    assert results["d"].status == "error"
    assert "extra: Extra inputs are not permitted" in results["d"].content
    assert "table: Input should be a valid string" in results["d"].content


def test_sync_tools_run_in_worker_threads_and_async_tools_on_the_loop() -> None:
    seen: dict[str, str] = {}

    def sync_fn(x: int) -> str:
        seen["sync"] = threading.current_thread().name
        return str(x * 2)

    async def async_fn(x: int) -> str:
        seen["async"] = threading.current_thread().name
        return str(x * 3)

    class Subclassed(BaseTool):
        name: str = "subclassed"
        description: str = "A BaseTool subclass with its own sync and async bodies."

        def _run(self, x: int) -> str:
            seen["sub_sync"] = threading.current_thread().name
            return str(x)

        async def _arun(self, x: int) -> str:
            seen["sub_async"] = threading.current_thread().name
            return str(-x)

    tools = [StructuredTool.from_function(sync_fn, name="sync_tool", description="s"),
             StructuredTool.from_function(coroutine=async_fn, name="async_tool", description="a"),
             Subclassed()]
    model = ToolCallingFake(responses=[
        AIMessage(content="", tool_calls=calls(("a", "sync_tool", {"x": 2}),
                                               ("b", "async_tool", {"x": 2}),
                                               ("c", "subclassed", {"x": 2}))),
        AIMessage(content="ok"),
    ])
    result = Agent(model=model, tools=tools).invoke("go", thread_id="t")
    contents = [m.content for m in result.messages if isinstance(m, ToolMessage)]
    assert contents == ["4", "6", "-2"]
    assert seen["sync"].startswith("interlock-tool")
    assert not seen["async"].startswith("interlock-tool")
    assert "sub_sync" not in seen and not seen["sub_async"].startswith("interlock-tool")


def test_streaming_deltas_and_usage_from_a_langchain_model() -> None:
    usage = {"input_tokens": 11, "output_tokens": 5, "total_tokens": 16}
    reply = AIMessage(content="旧记录 已 删除", usage_metadata=usage)
    agent = Agent(model=StreamingFake(messages=iter([reply])), tools=[])

    async def go() -> list[Any]:
        return [e async for e in agent.astream("hi", thread_id="t")]

    events = asyncio.run(go())
    # GenericFakeChatModel streams the text in whitespace-separated pieces
    assert [e.text for e in events if isinstance(e, ModelTextDelta)] == [
        "旧记录", " ", "已", " ", "删除"]
    assert events[-1].result.output == "旧记录 已 删除"
    # usage reported by the model is kept on the stored assistant message
    agent = Agent(model=ToolCallingFake(responses=[reply]), tools=[])
    final = agent.invoke("hi", thread_id="t").messages[-1]
    assert final == AssistantMessage(content="旧记录 已 删除",
                                     usage=Usage(input_tokens=11, output_tokens=5,
                                                 total_tokens=16))
    assert agent.get_thread("t").messages[-1] == final


def test_unusable_models_and_runnables_fail_at_construction() -> None:
    with pytest.raises(ConfigurationError, match="does not support tool calling"):
        Agent(model=FakeListChatModel(responses=["x"]), tools=[])
    with pytest.raises(ConfigurationError, match="is not a LangChain chat model"):
        Agent(model=FakeListChatModel(responses=["x"]).bind(stop=["."]), tools=[])


def test_missing_extra_names_it() -> None:
    code = ("import sys; sys.modules['langchain_core'] = None\n"
            "from interlock import MissingDependency\n"
            "try:\n    import interlock.integrations.langchain\n"
            "except MissingDependency as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "'.[langchain]'" in out and "whl[langchain]" in out  # the extra, as installed here
    assert "langchain-core" in out


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
_args = st.dictionaries(st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1,
                                max_size=5),
                        st.one_of(st.integers(), _text, st.booleans(), st.none()), max_size=3)
_calls = st.lists(st.builds(ToolCall, id=st.uuids().map(str),
                            name=st.sampled_from(["a", "b_c"]), args=_args,
                            args_error=st.one_of(st.none(), _text)), max_size=3)
_messages = st.lists(st.one_of(
    st.builds(SystemMessage, content=_text),
    st.builds(UserMessage, content=_text),
    st.builds(AssistantMessage, content=_text, tool_calls=_calls,
              usage=st.one_of(st.none(), st.builds(Usage, input_tokens=st.integers(0, 99),
                                                   output_tokens=st.integers(0, 99),
                                                   total_tokens=st.integers(0, 199)))),
    st.builds(ToolMessage, tool_call_id=st.uuids().map(str), name=st.sampled_from(["a", "b"]),
              content=_text, status=st.sampled_from(["success", "error"]),
              decision=st.sampled_from([None, "reject", "respond", "edit"])),
), max_size=6)


@settings(max_examples=60, deadline=None)
@given(_messages)
def test_message_conversion_is_lossless_both_ways(messages: list[Message]) -> None:
    lc = to_langchain(messages)
    back = from_langchain(lc)
    assert back == messages
    assert [m.model_dump() for m in to_langchain(back)] == [m.model_dump() for m in lc]


def test_interrupt_on_policy_objects_work_with_langchain_tools() -> None:
    ran: list[str] = []

    @lc_tool
    def execute_sql(query: str) -> str:
        """Run SQL."""
        ran.append(query)
        return "ok"

    model = ToolCallingFake(responses=[
        AIMessage(content="", tool_calls=calls(("a", "execute_sql", {"query": "SELECT 1"}),
                                               ("b", "execute_sql", {"query": "DROP t"}))),
        AIMessage(content="done"),
    ])
    agent = Agent(model=model, tools=[execute_sql], middleware=[HumanInTheLoop(interrupt_on={
        "execute_sql": InterruptOn(allowed_decisions=["approve", "reject"],
                                   when=lambda c: not c.args["query"].startswith("SELECT"))})])
    result = agent.invoke("go", thread_id="t")
    assert [a.tool_call_id for a in result.interrupts[0].value.action_requests] == ["b"]
    assert ran == ["SELECT 1"]
    result = agent.resume("t", [{"type": "reject"}])
    assert ran == ["SELECT 1"] and result.output == "done"


def test_content_blocks_and_command_results() -> None:
    """Tools that return content blocks (a list) give the model their text; a LangChain tool
    that returns a LangGraph ``Command`` carrying its ``ToolMessage`` gives that message's
    content (an error ToolMessage is an error result); any other ``Command`` is an error
    result naming what is taken."""
    @tool
    def blocks(topic: str) -> list[dict[str, str]]:
        """Content blocks, as MCP and LangChain tools return them."""
        return [{"type": "text", "text": f"{topic}: "}, {"type": "text", "text": "ok"}]

    @lc_tool
    def handoff(note: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Answer through a Command."""
        status = "error" if note == "bad" else "success"
        return Command(update={"messages": [LCToolMessage(
            content=[{"type": "text", "text": f"noted {note}"}], tool_call_id=tool_call_id,
            status=status)]})

    @lc_tool
    def jump(note: str) -> Command:
        """Go elsewhere (not something interlock can do)."""
        return Command(goto="other")

    model = ToolCallingFake(responses=[
        AIMessage(content="", tool_calls=calls(("a", "blocks", {"topic": "t"}),
                                               ("b", "handoff", {"note": "x"}),
                                               ("c", "handoff", {"note": "bad"}),
                                               ("d", "jump", {"note": "y"}))),
        AIMessage(content="done"),
    ])
    result = Agent(model=model, tools=[blocks, handoff, jump]).invoke("go", thread_id="t")
    out = {m.tool_call_id: (m.status, m.content) for m in result.messages
           if isinstance(m, ToolMessage)}
    assert out["a"] == ("success", "t: ok")
    assert out["b"] == ("success", "noted x")
    assert out["c"] == ("error", "noted bad")
    assert out["d"][0] == "error" and "Command" in out["d"][1] and "ToolMessage" in out["d"][1]
