"""Message conversion to each provider's request format (the parts the wire tests do not
reach: several system messages, empty turns, cancelled / expired results)."""

from __future__ import annotations

import json

from interlock import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from interlock.messages import Message
from interlock.models._common import parse_arguments
from interlock.models.anthropic import to_anthropic_messages
from interlock.models.openai import to_openai_messages

CONVERSATION: list[Message] = [
    SystemMessage(content="规则一"),
    UserMessage(content="你好"),
    AssistantMessage(content="", tool_calls=[
        ToolCall(id="c1", name="execute_sql", args={"query": "SELECT '中文'"}),
        ToolCall(id="c2", name="send_email", args={}, args_error="not valid JSON: '{'"),
        ToolCall(id="c3", name="ask_user", args={"question": "?"}),
    ]),
    ToolMessage(tool_call_id="c1", name="execute_sql", content="[]"),
    ToolMessage(tool_call_id="c2", name="send_email", status="error", decision="expire",
                content="No reviewer decided in time on the tool call `send_email` (id c2)"),
    ToolMessage(tool_call_id="c3", name="ask_user", status="success", decision="respond",
                content=""),
    UserMessage(content="继续"),
    SystemMessage(content="规则二"),
    AssistantMessage(content=""),
    AssistantMessage(content="好的"),
]


def test_openai_conversion() -> None:
    out = to_openai_messages(CONVERSATION)
    assert [m["role"] for m in out] == [
        "system", "user", "assistant", "tool", "tool", "tool", "user", "system", "assistant",
        "assistant"]
    calls = out[2]["tool_calls"]
    assert out[2]["content"] is None
    assert calls[0]["function"]["arguments"] == '{"query": "SELECT \'中文\'"}'
    assert calls[1]["function"]["arguments"] == "{}"  # unparseable: sent empty, never guessed
    assert out[4] == {"role": "tool", "tool_call_id": "c2",
                      "content": "No reviewer decided in time on the tool call `send_email` "
                                 "(id c2)"}
    assert out[5] == {"role": "tool", "tool_call_id": "c3", "content": ""}
    assert out[8] == {"role": "assistant", "content": ""}
    json.dumps(out)  # plain JSON


def test_anthropic_conversion() -> None:
    system, out = to_anthropic_messages(CONVERSATION)
    assert system == "规则一\n\n规则二"
    assert [m["role"] for m in out] == ["user", "assistant", "user", "assistant"]
    assert [b["type"] for b in out[1]["content"]] == ["tool_use"] * 3
    assert out[1]["content"][1]["input"] == {}
    assert out[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "[]"},
        {"type": "tool_result", "tool_use_id": "c2", "is_error": True,
         "content": "No reviewer decided in time on the tool call `send_email` (id c2)"},
        {"type": "tool_result", "tool_use_id": "c3"},  # empty content is left out
        {"type": "text", "text": "继续"},
    ]
    # the empty assistant message is dropped; roles still alternate
    assert out[3]["content"] == [{"type": "text", "text": "好的"}]


def test_parse_arguments() -> None:
    assert parse_arguments('{"a": "中"}') == ({"a": "中"}, None)
    assert parse_arguments("") == ({}, None)
    assert parse_arguments(None) == ({}, None)
    assert parse_arguments({"x": 1}) == ({"x": 1}, None)
    for bad in ("[1, 2]", '"text"', "{oops", "null"):
        args, error = parse_arguments(bad)
        assert args == {}
        assert error is not None and repr(bad) in error
    args, error = parse_arguments("x" * 5000)
    assert error is not None and "(5000 characters)" in error and len(error) < 400
