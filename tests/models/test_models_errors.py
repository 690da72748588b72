"""Provider failures: HTTP errors (after the SDK's own retries), malformed replies, errors
inside a stream, cut streams, unreachable servers and timeouts all surface as ``ModelError``;
the thread keeps no partial message and the run can be retried without duplicates."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from interlock import (
    AnthropicChat,
    AssistantMessage,
    ModelError,
    OpenAIChat,
    ToolMessage,
    UserMessage,
)

from .fake_servers import (
    Call,
    FakeAnthropic,
    FakeOpenAI,
    FakeProvider,
    Reply,
    error,
    malformed,
    text,
    tools,
)
from .helpers import EDITED_QUERY, ORIGINAL_QUERY, USER_TEXT, Ops, Runner, make_agent, make_model

RECOVERED = "恢复后的回答：没有删除任何记录。"


@pytest.fixture(params=["invoke", "stream"])
def runner(request: pytest.FixtureRequest) -> Runner:
    return Runner(str(request.param))


def assert_failed_unchanged(agent_thread_messages: list[object]) -> None:
    assert len(agent_thread_messages) == 1
    assert isinstance(agent_thread_messages[0], UserMessage)
    assert agent_thread_messages[0].content == USER_TEXT


def recover_and_check(fake: FakeProvider, agent: object, thread_id: str) -> None:
    """Recovery makes one more request with the unchanged conversation, then completes."""
    from interlock import Agent

    assert isinstance(agent, Agent)
    fake.script(text(RECOVERED))
    before = len(fake.requests)
    result = agent.recover(thread_id)
    assert result.status == "completed"
    assert result.output == RECOVERED
    assert [type(m).__name__ for m in result.messages] == ["UserMessage", "AssistantMessage"]
    assert len(fake.requests) == before + 1
    assert fake.user_texts(fake.bodies[-1]) == [USER_TEXT]
    assert fake.problems == []


@pytest.mark.parametrize(
    ("status", "message", "attempts"),
    [
        (500, "The server had an error while processing your request. Sorry about that!", 2),
        (429, "Rate limit reached for requests per min (RPM): Limit 3, Used 3.", 2),
        (400, "Invalid 'messages[0].content': string too long.", 1),
    ],
)
def test_http_error_is_model_error_and_run_can_be_retried(
    fake: FakeProvider, runner: Runner, tmp_path: Path, status: int, message: str,
    attempts: int,
) -> None:
    # max_retries=1: a retryable status is tried twice, then reported
    fake.script(*[error(status, message) for _ in range(attempts)])
    agent = make_agent(make_model(fake, max_retries=1), tmp_path, Ops())
    with pytest.raises(ModelError) as info:
        runner.invoke(agent, USER_TEXT, "t")
    err = info.value
    assert err.provider == fake.provider
    assert err.status_code == status
    assert message in err.provider_message
    assert f"HTTP {status}" in str(err)
    assert len(fake.requests) == attempts  # the SDK's own retries happened (or not, for 400)
    if attempts > 1:
        assert "after 1 retry" in str(err)
        retry_counts = [r.headers.get("x-stainless-retry-count") for r in fake.requests]
        assert retry_counts == ["0", "1"]
    state = agent.get_thread("t")
    assert state.status == "failed"
    assert_failed_unchanged(list(state.messages))
    recover_and_check(fake, agent, "t")


def test_retry_succeeds_inside_the_sdk(fake: FakeProvider, tmp_path: Path) -> None:
    """A transient 503 retried by the SDK is invisible to the thread."""
    fake.script(error(503, "upstream overloaded"), text("好的"))
    agent = make_agent(make_model(fake, max_retries=2), tmp_path, Ops())
    result = agent.invoke(USER_TEXT, thread_id="t")
    assert result.output == "好的"
    assert len(fake.requests) == 2
    assert fake.bodies[0] == fake.bodies[1]


MALFORMED_STREAM = {
    "openai": b'data: {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [\n\n',
    "anthropic": b'event: message_start\ndata: {"type": "message_start", "message": {\n\n',
}


def test_malformed_json_is_model_error(
    fake: FakeProvider, runner: Runner, tmp_path: Path
) -> None:
    if runner.streaming:
        fake.script(Reply(raw=MALFORMED_STREAM[fake.provider], content_type="text/event-stream"))
    else:
        fake.script(malformed())
    agent = make_agent(make_model(fake, max_retries=1), tmp_path, Ops())
    with pytest.raises(ModelError) as info:
        runner.invoke(agent, USER_TEXT, "t")
    assert info.value.provider == fake.provider
    assert "malformed reply" in str(info.value)
    assert "not valid JSON" in str(info.value)
    assert len(fake.requests) == 1  # a broken body is not retried by the SDKs
    state = agent.get_thread("t")
    assert state.status == "failed"
    assert_failed_unchanged(list(state.messages))
    recover_and_check(fake, agent, "t")


@pytest.mark.parametrize("body", [b'{"unexpected": true}', b"[]", b"null"])
def test_wrong_shape_json_is_model_error(
    fake: FakeProvider, tmp_path: Path, body: bytes
) -> None:
    fake.script(malformed(body))
    agent = make_agent(make_model(fake), tmp_path, Ops())
    with pytest.raises(ModelError, match="malformed reply"):
        agent.invoke(USER_TEXT, thread_id="t")
    assert_failed_unchanged(list(agent.get_thread("t").messages))


def test_html_page_instead_of_api_is_model_error(fake: FakeProvider, tmp_path: Path) -> None:
    """A base URL pointing at a web page (200, text/html) is reported, not stored."""
    fake.script(malformed(b"<html><body>Welcome to nginx!</body></html>",
                          content_type="text/html"))
    agent = make_agent(make_model(fake), tmp_path, Ops())
    with pytest.raises(ModelError, match="Welcome to nginx"):
        agent.invoke(USER_TEXT, thread_id="t")
    assert_failed_unchanged(list(agent.get_thread("t").messages))


def test_error_event_inside_stream(fake: FakeProvider, tmp_path: Path) -> None:
    fake.script(Reply(text=["部分", "回答"], stream_error="Overloaded"))
    agent = make_agent(make_model(fake), tmp_path, Ops())
    runner = Runner("stream")
    with pytest.raises(ModelError, match="Overloaded") as info:
        runner.invoke(agent, USER_TEXT, "t")
    assert info.value.provider == fake.provider
    state = agent.get_thread("t")
    assert state.status == "failed"
    assert_failed_unchanged(list(state.messages))  # the partial text is not stored
    recover_and_check(fake, agent, "t")


def test_stream_cut_before_the_end(fake: FakeProvider, tmp_path: Path) -> None:
    fake.script(tools(Call("call_1", "execute_sql", {"query": ORIGINAL_QUERY}), cut=True))
    agent = make_agent(make_model(fake), tmp_path, Ops())
    with pytest.raises(ModelError, match="connection was probably cut"):
        Runner("stream").invoke(agent, USER_TEXT, "t")
    assert_failed_unchanged(list(agent.get_thread("t").messages))
    recover_and_check(fake, agent, "t")


def test_connection_dropped_mid_stream(fake: FakeProvider, tmp_path: Path) -> None:
    fake.script(tools(Call("call_1", "execute_sql", {"query": ORIGINAL_QUERY}),
                      text=("部分",), cut=True, abort=True))
    agent = make_agent(make_model(fake), tmp_path, Ops())
    with pytest.raises(ModelError, match="peer closed connection") as info:
        Runner("stream").invoke(agent, USER_TEXT, "t")
    assert info.value.provider == fake.provider
    assert_failed_unchanged(list(agent.get_thread("t").messages))
    recover_and_check(fake, agent, "t")


def test_model_failure_after_resume_keeps_results_and_runs_nothing_twice(
    fake: FakeProvider, runner: Runner, tmp_path: Path
) -> None:
    sql_id, mail_id = "call_sql_1", "call_mail_1"
    fake.script(
        tools(Call(sql_id, "execute_sql", {"query": ORIGINAL_QUERY}),
              Call(mail_id, "send_email", {"to": "a@b.c", "body": "你好"})),
        error(500, "internal error"), error(500, "internal error"),
    )
    ops = Ops()
    agent = make_agent(make_model(fake, max_retries=1), tmp_path, ops)
    assert runner.invoke(agent, USER_TEXT, "t").interrupted
    with pytest.raises(ModelError) as info:
        runner.resume(agent, "t", [
            {"type": "edit", "edited_action": {"name": "execute_sql",
                                               "args": {"query": EDITED_QUERY}}},
            {"type": "reject"},
        ])
    assert info.value.status_code == 500
    assert len(fake.requests) == 3
    state = agent.get_thread("t")
    assert state.status == "failed"
    assert [type(m).__name__ for m in state.messages] == [
        "UserMessage", "AssistantMessage", "ToolMessage", "ToolMessage"]
    assert ops.ran == [("execute_sql", {"query": EDITED_QUERY})]

    fake.script(text(RECOVERED))
    result = agent.recover("t")
    assert result.output == RECOVERED
    assert ops.ran == [("execute_sql", {"query": EDITED_QUERY})]  # not run again
    assert [type(m).__name__ for m in result.messages] == [
        "UserMessage", "AssistantMessage", "ToolMessage", "ToolMessage", "AssistantMessage"]
    assert len([m for m in result.messages if isinstance(m, AssistantMessage)]) == 2
    assert [m.tool_call_id for m in result.messages if isinstance(m, ToolMessage)] == [
        sql_id, mail_id]
    last = fake.bodies[-1]
    assert [r["id"] for r in fake.tool_results(last)] == [sql_id, mail_id]
    assert fake.user_texts(last) == [USER_TEXT]
    assert fake.problems == []
    # the failed attempts and the successful retry sent the same conversation
    assert fake.bodies[1]["messages"] == last["messages"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_unreachable_server_is_model_error(provider: str, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    model = (OpenAIChat("gpt-4.1-mini", base_url=url + "/v1", api_key="k", max_retries=0)
             if provider == "openai"
             else AnthropicChat("claude-sonnet-4-6", base_url=url, api_key="k", max_retries=0))
    agent = make_agent(model, tmp_path, Ops())
    with pytest.raises(ModelError, match=r"the connection to .* failed: ConnectError") as info:
        agent.invoke(USER_TEXT, thread_id="t")
    assert info.value.provider == provider
    assert info.value.status_code is None
    assert agent.get_thread("t").status == "failed"


def test_timeout_is_model_error(fake: FakeProvider, runner: Runner, tmp_path: Path) -> None:
    fake.script(Reply(text=["太慢了"], delay=1.0))
    agent = make_agent(make_model(fake, timeout=0.2, max_retries=0), tmp_path, Ops())
    with pytest.raises(ModelError, match="timed out") as info:
        runner.invoke(agent, USER_TEXT, "t")
    assert "timeout=" in str(info.value)
    assert_failed_unchanged(list(agent.get_thread("t").messages))


def test_auth_error_names_the_environment_variable(fake: FakeProvider, tmp_path: Path) -> None:
    fake.script(error(401, "Incorrect API key provided: test-key."))
    agent = make_agent(make_model(fake), tmp_path, Ops())
    with pytest.raises(ModelError) as info:
        agent.invoke(USER_TEXT, thread_id="t")
    assert info.value.status_code == 401
    env = "OPENAI_API_KEY" if isinstance(fake, FakeOpenAI) else "ANTHROPIC_API_KEY"
    assert isinstance(fake, FakeOpenAI | FakeAnthropic)
    assert env in str(info.value)
    assert len(fake.requests) == 1
