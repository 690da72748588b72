"""A full human-in-the-loop cycle through the real OpenAI and Anthropic SDK clients against
local fake servers: two parallel tool calls, pause, edit one, reject the other, resume, final
answer; plain JSON and SSE streaming. The servers check every request against the provider's
protocol rules; the tests check what reached the wire."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from interlock import (
    AssistantMessage,
    HITLRequest,
    InterruptRaised,
    ModelTextDelta,
    ToolCallProposed,
    ToolMessage,
    UserMessage,
)

from .fake_servers import Call, FakeAnthropic, FakeOpenAI, FakeProvider, text, tools
from .helpers import (
    EDITED_QUERY,
    EMAIL_ARGS,
    ORIGINAL_QUERY,
    REJECT_REASON,
    SYSTEM_PROMPT,
    USER_TEXT,
    Ops,
    Runner,
    deltas,
    make_agent,
    make_model,
)

IDS = {
    "openai": ("call_Qz3kQm1X8hWvT2nJ4aL0pB7c", "call_Vb9sR2dE6yUiO4pA8sDf1GhJ"),
    "anthropic": ("toolu_01A09q90qw90lq917835lq9", "toolu_01BmVx7WqF3nZk5cJ2tYhR8e"),
}
FIRST_TEXT = ("我将", "删除旧记录，", "并通知 DBA。")
FINAL_TEXT = ("完成：", "已删除 2019 年以前的记录，", "邮件未发送。")


@pytest.fixture(params=["invoke", "stream"])
def runner(request: pytest.FixtureRequest) -> Runner:
    return Runner(str(request.param))


def script_cycle(fake: FakeProvider) -> tuple[str, str]:
    sql_id, mail_id = IDS[fake.provider]
    fake.script(
        tools(Call(sql_id, "execute_sql", {"query": ORIGINAL_QUERY}),
              Call(mail_id, "send_email", EMAIL_ARGS), text=FIRST_TEXT),
        text(*FINAL_TEXT),
    )
    return sql_id, mail_id


def test_edit_and_reject_parallel_calls_on_the_wire(
    fake: FakeProvider, runner: Runner, tmp_path: Path
) -> None:
    sql_id, mail_id = script_cycle(fake)
    ops = Ops()
    agent = make_agent(make_model(fake), tmp_path, ops)

    # ---- first model call: two parallel tool calls, the run pauses
    result = runner.invoke(agent, USER_TEXT, "t1")
    assert result.interrupted
    request = result.interrupts[0].value
    assert isinstance(request, HITLRequest)
    assert [(a.tool_call_id, a.name, a.args) for a in request.action_requests] == [
        (sql_id, "execute_sql", {"query": ORIGINAL_QUERY}),
        (mail_id, "send_email", EMAIL_ARGS),
    ]
    assert ops.ran == []
    turn = result.messages[1]
    assert isinstance(turn, AssistantMessage)
    assert turn.content == "".join(FIRST_TEXT)
    assert [c.id for c in turn.tool_calls] == [sql_id, mail_id]
    if runner.streaming:
        events = runner.take()
        assert deltas(events) == list(FIRST_TEXT)
        proposed = [e.call for e in events if isinstance(e, ToolCallProposed)]
        assert [(c.id, c.name, c.args) for c in proposed] == [
            (sql_id, "execute_sql", {"query": ORIGINAL_QUERY}),
            (mail_id, "send_email", EMAIL_ARGS),
        ]
        # text first, then the proposals, then the pause
        kinds = [type(e).__name__ for e in events]
        assert kinds.index("ToolCallProposed") > max(
            i for i, k in enumerate(kinds) if k == "ModelTextDelta")
        assert any(isinstance(e, InterruptRaised) for e in events)

    # ---- the reviewer edits the SQL and rejects the e-mail; the run resumes
    result = runner.resume(agent, "t1", [
        {"type": "edit", "edited_action": {"name": "execute_sql",
                                           "args": {"query": EDITED_QUERY}}},
        {"type": "reject", "message": REJECT_REASON},
    ])
    assert result.status == "completed"
    assert result.output == "".join(FINAL_TEXT)
    assert ops.ran == [("execute_sql", {"query": EDITED_QUERY})]
    assert [type(m).__name__ for m in result.messages] == [
        "UserMessage", "AssistantMessage", "ToolMessage", "ToolMessage", "AssistantMessage"]
    if runner.streaming:
        assert deltas(runner.take()) == list(FINAL_TEXT)

    # ---- what the provider received
    assert fake.problems == []
    assert len(fake.requests) == 2
    first, second = fake.bodies
    for body in (first, second):
        assert body["model"] == fake.model_name
        assert bool(body.get("stream")) is runner.streaming
        assert fake.user_texts(body) == [USER_TEXT]
    # the model's original calls, ids intact, then exactly one result per call, in call order
    assert fake.assistant_calls(second) == [[
        (sql_id, "execute_sql", {"query": ORIGINAL_QUERY}),
        (mail_id, "send_email", EMAIL_ARGS),
    ]]
    edited, rejected = fake.tool_results(second)
    assert edited["id"] == sql_id
    assert edited["content"].startswith("Note: a reviewer changed this tool call")
    assert EDITED_QUERY in edited["content"]
    assert edited["content"].endswith("已删除 42 行")
    assert rejected["id"] == mail_id
    assert "rejected the tool call `send_email`" in rejected["content"]
    assert REJECT_REASON in rejected["content"]

    if isinstance(fake, FakeAnthropic):
        check_anthropic_wire(first, second, sql_id, mail_id)
    else:
        assert isinstance(fake, FakeOpenAI)
        check_openai_wire(first, second, sql_id, mail_id)


def check_openai_wire(first: dict[str, Any], second: dict[str, Any], sql_id: str,
                      mail_id: str) -> None:
    assert first["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert [t["function"]["name"] for t in first["tools"]] == [
        "execute_sql", "send_email", "ask_user"]
    assert first["tools"][0]["function"]["parameters"]["required"] == ["query"]
    msgs = second["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "tool",]
    assistant = msgs[2]
    assert assistant["content"] == "".join(FIRST_TEXT)
    # Chinese text inside the JSON argument string is sent as is, not as \\u escapes
    raw_args = assistant["tool_calls"][1]["function"]["arguments"]
    assert "旧记录已删除 ✅" in raw_args
    assert "\\u" not in raw_args
    assert json.loads(raw_args) == EMAIL_ARGS
    # chat completions has no error flag: the rejection is a tool message saying so
    assert msgs[3] == {"role": "tool", "tool_call_id": sql_id, "content": msgs[3]["content"]}
    assert msgs[4]["tool_call_id"] == mail_id
    assert set(msgs[4]) == {"role", "tool_call_id", "content"}
    assert msgs[4]["content"].startswith("The user rejected the tool call `send_email`")


def check_anthropic_wire(first: dict[str, Any], second: dict[str, Any], sql_id: str,
                         mail_id: str) -> None:
    assert first["system"] == SYSTEM_PROMPT
    assert all(m["role"] in ("user", "assistant") for m in second["messages"])
    assert first["max_tokens"] == 4096
    assert [t["name"] for t in first["tools"]] == ["execute_sql", "send_email", "ask_user"]
    assert first["tools"][0]["input_schema"]["required"] == ["query"]
    msgs = second["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert msgs[1]["content"] == [
        {"type": "text", "text": "".join(FIRST_TEXT)},
        {"type": "tool_use", "id": sql_id, "name": "execute_sql",
         "input": {"query": ORIGINAL_QUERY}},
        {"type": "tool_use", "id": mail_id, "name": "send_email", "input": EMAIL_ARGS},
    ]
    # both results in ONE user message, in call order; only the rejected one is an error
    results = msgs[2]["content"]
    assert [b["type"] for b in results] == ["tool_result", "tool_result"]
    assert [b["tool_use_id"] for b in results] == [sql_id, mail_id]
    assert "is_error" not in results[0]
    assert results[1]["is_error"] is True


def test_respond_is_a_successful_result(fake: FakeProvider, tmp_path: Path) -> None:
    call_id = IDS[fake.provider][0]
    fake.script(
        tools(Call(call_id, "ask_user", {"question": "删除哪一年之前的记录？"})),
        text("好的，删除 2019 年之前的记录。"),
    )
    ops = Ops()
    agent = make_agent(make_model(fake), tmp_path, ops)
    assert agent.invoke(USER_TEXT, thread_id="t").interrupted
    result = agent.resume("t", [{"type": "respond", "message": "2019 年"}])
    assert result.output == "好的，删除 2019 年之前的记录。"
    assert ops.ran == []
    assert fake.problems == []
    [answer] = fake.tool_results(fake.bodies[1])
    assert answer["id"] == call_id
    assert answer["content"] == "2019 年"
    assert not answer["is_error"]
    if isinstance(fake, FakeAnthropic):
        block = fake.bodies[1]["messages"][2]["content"][0]
        assert block == {"type": "tool_result", "tool_use_id": call_id, "content": "2019 年"}


def test_cancel_then_new_message_keeps_the_transcript_valid(
    fake: FakeProvider, tmp_path: Path
) -> None:
    """After a cancel, the next request carries the cancelled calls' error results and then
    the new user message (for Anthropic: in the same user turn, results first)."""
    sql_id, mail_id = script_cycle(fake)
    fake.script(text("好的，不删除了。"))
    ops = Ops()
    agent = make_agent(make_model(fake), tmp_path, ops)
    assert agent.invoke(USER_TEXT, thread_id="t").interrupted
    agent.cancel("t", reason="改主意了")
    fake.replies.pop(0)  # the scripted final answer of the cycle is not used
    result = agent.invoke("算了，不要删除。", thread_id="t")
    assert result.output == "好的，不删除了。"
    assert ops.ran == []
    assert fake.problems == []
    body = fake.bodies[1]
    results = fake.tool_results(body)
    assert [r["id"] for r in results] == [sql_id, mail_id]
    assert all("cancelled by a reviewer" in r["content"] for r in results)
    assert fake.user_texts(body) == [USER_TEXT, "算了，不要删除。"]
    if isinstance(fake, FakeAnthropic):
        last = body["messages"][-1]
        assert last["role"] == "user"
        assert [b["type"] for b in last["content"]] == ["tool_result", "tool_result", "text"]
        assert all(b.get("is_error") is True for b in last["content"][:2])
    else:
        assert [m["role"] for m in body["messages"][-3:]] == ["tool", "tool", "user"]


def test_messages_survive_storage_and_are_resent_identically(
    fake: FakeProvider, tmp_path: Path
) -> None:
    """Resuming with a new Agent object (as after a restart) sends the same conversation."""
    sql_id, mail_id = script_cycle(fake)
    ops = Ops()
    make_agent(make_model(fake), tmp_path, ops).invoke(USER_TEXT, thread_id="t")
    fresh = make_agent(make_model(fake), tmp_path, ops)
    result = fresh.resume("t", [{"type": "approve"}, {"type": "reject"}])
    assert result.status == "completed"
    assert fake.problems == []
    assert ops.ran == [("execute_sql", {"query": ORIGINAL_QUERY})]
    tool_msgs = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.status, m.decision) for m in tool_msgs] == [
        (sql_id, "success", None), (mail_id, "error", "reject")]
    assert isinstance(result.messages[0], UserMessage)
    assert fake.assistant_calls(fake.bodies[1])[0][1] == (mail_id, "send_email", EMAIL_ARGS)


def test_stream_text_only_answer(fake: FakeProvider, tmp_path: Path) -> None:
    fake.script(text("你", "好", "，", "世界！", " Hello"))
    agent = make_agent(make_model(fake), tmp_path, Ops())
    runner = Runner("stream")
    result = runner.invoke(agent, "打个招呼", "t")
    assert result.output == "你好，世界！ Hello"
    events = runner.take()
    assert [e.text for e in events if isinstance(e, ModelTextDelta)] == [
        "你", "好", "，", "世界！", " Hello"]
    assert not any(isinstance(e, ToolCallProposed) for e in events)
    assert fake.problems == []
