"""Streaming assembly and argument parsing: text deltas in order, one ``ToolCallProposed`` per
call with complete arguments however the fragments arrive, and unparseable arguments kept as
an ``args_error`` (the call pauses; it is never run with guessed arguments)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any

import pytest

from interlock import (
    AssistantMessage,
    HITLRequest,
    ModelTextDelta,
    ToolCallProposed,
    UserMessage,
)
from interlock.models.openai import _StreamState

from .fake_servers import Call, FakeAnthropic, FakeOpenAI, FakeProvider, Reply, tools
from .helpers import USER_TEXT, Ops, Runner, deltas, make_agent, make_model

THREE_CALLS = [
    ("execute_sql", {"query": "SELECT * FROM 订单 WHERE 状态 = '待发货' LIMIT 10"}),
    ("send_email", {"to": "运维@example.com", "body": "第一行\n第二行 \"引号\" \\ 反斜杠 🚀"}),
    ("execute_sql", {"query": "UPDATE t SET a = 1"}),
]


def _ids(fake: FakeProvider) -> list[str]:
    prefix = "toolu_01" if isinstance(fake, FakeAnthropic) else "call_"
    return [f"{prefix}{i}xYz" for i in range(len(THREE_CALLS))]


@pytest.mark.parametrize("fragment", [1, 4, 1000])
def test_astream_text_deltas_then_one_proposal_per_call(
    fake: FakeProvider, tmp_path: Path, fragment: int
) -> None:
    ids = _ids(fake)
    pieces = ["先查询", "订单，", "然后", "通知运维。"]
    fake.script(Reply(text=pieces, calls=[Call(i, n, a) for i, (n, a) in zip(ids, THREE_CALLS,
                                                                          strict=True)],
                      fragment=fragment))
    agent = make_agent(make_model(fake), tmp_path, Ops())
    runner = Runner("stream")
    result = runner.invoke(agent, USER_TEXT, "t")
    assert result.interrupted
    events = runner.take()
    assert deltas(events) == pieces
    proposed = [e.call for e in events if isinstance(e, ToolCallProposed)]
    assert [(c.id, c.name, c.args) for c in proposed] == [
        (i, n, a) for i, (n, a) in zip(ids, THREE_CALLS, strict=True)]
    assert all(c.args_error is None for c in proposed)
    request = result.interrupts[0].value
    assert isinstance(request, HITLRequest)
    assert [a.args for a in request.action_requests] == [a for _, a in THREE_CALLS]
    assert fake.problems == []


def test_interleaved_fragments_of_parallel_calls(openai_fake: FakeOpenAI, tmp_path: Path) -> None:
    """Fragments of two calls arriving alternately are assembled by their ``index``."""
    openai_fake.script(Reply(calls=[Call("call_a", *THREE_CALLS[0]),
                                    Call("call_b", *THREE_CALLS[1])],
                             fragment=3, interleave=True))
    agent = make_agent(make_model(openai_fake), tmp_path, Ops())
    runner = Runner("stream")
    runner.invoke(agent, USER_TEXT, "t")
    proposed = [e.call for e in runner.take() if isinstance(e, ToolCallProposed)]
    assert [(c.id, c.name, c.args) for c in proposed] == [
        ("call_a", *THREE_CALLS[0]), ("call_b", *THREE_CALLS[1])]


@pytest.mark.parametrize("mode", ["invoke", "stream"])
def test_unparseable_arguments_pause_and_are_never_guessed(
    fake: FakeProvider, tmp_path: Path, mode: str
) -> None:
    broken = '{"query": "DELETE FROM records WHERE id = 1'  # cut off: not JSON
    fake.script(tools(Call("call_bad", "execute_sql", broken)), Reply(text=["好的，不执行。"]))
    ops = Ops()
    agent = make_agent(make_model(fake), tmp_path, ops)
    runner = Runner(mode)
    result = runner.invoke(agent, USER_TEXT, "t")
    assert result.interrupted
    turn = result.messages[1]
    assert isinstance(turn, AssistantMessage)
    [call] = turn.tool_calls
    assert call.args == {}
    assert call.args_error is not None
    if isinstance(fake, FakeOpenAI):
        assert "not valid JSON" in call.args_error
        assert "DELETE FROM records" in call.args_error  # the model's text is quoted
    request = result.interrupts[0].value
    assert isinstance(request, HITLRequest)
    assert request.action_requests[0].args == {}
    result = runner.resume(agent, "t", [{"type": "reject"}])
    assert result.output == "好的，不执行。"
    assert ops.ran == []
    # the call is sent back with empty arguments and an error result
    assert fake.problems == []
    assert fake.assistant_calls(fake.bodies[1]) == [[("call_bad", "execute_sql", {})]]
    [res] = fake.tool_results(fake.bodies[1])
    assert "rejected" in res["content"]
    if isinstance(fake, FakeAnthropic):
        assert res["is_error"] is True


def test_tool_without_arguments(fake: FakeProvider, tmp_path: Path) -> None:
    """An empty argument string (a parameterless call) is ``{}``, not an error."""
    fake.script(tools(Call("call_0", "execute_sql", "")))

    async def go() -> list[Any]:
        model = make_model(fake)
        return [p async for p in model.stream([UserMessage(content="x")], [])]

    *_, message = asyncio.run(go())
    assert isinstance(message, AssistantMessage)
    assert message.tool_calls[0].args == {}
    assert message.tool_calls[0].args_error is None


def test_model_stream_protocol_directly(fake: FakeProvider) -> None:
    """``Model.stream`` yields str deltas, then exactly one complete AssistantMessage."""
    fake.script(Reply(text=["a", "b", "c"], calls=[Call("call_1", "send_email",
                                                        {"to": "x", "body": "y"})]))

    async def go() -> list[Any]:
        model = make_model(fake)
        return [p async for p in model.stream([UserMessage(content="x")], [])]

    out = asyncio.run(go())
    assert out[:3] == ["a", "b", "c"]
    assert len(out) == 4
    final = out[3]
    assert isinstance(final, AssistantMessage)
    assert final.content == "abc"
    assert [(c.id, c.name, c.args) for c in final.tool_calls] == [
        ("call_1", "send_email", {"to": "x", "body": "y"})]


def test_sync_stream_api(fake: FakeProvider, tmp_path: Path) -> None:
    fake.script(Reply(text=["同步", "流式"]))
    agent = make_agent(make_model(fake), tmp_path, Ops())
    events = list(agent.stream("你好", thread_id="t"))
    assert [e.text for e in events if isinstance(e, ModelTextDelta)] == ["同步", "流式"]


# ---------------------------------------------------------------- OpenAI-compatible quirks


def _chunk(tool_calls: list[Any] | None = None, content: str | None = None,
           finish: str | None = None) -> Any:
    return NS(choices=[NS(delta=NS(content=content, refusal=None, tool_calls=tool_calls),
                          finish_reason=finish)])


def _delta(index: int | None, id: str | None = None, name: str | None = None,
           arguments: str | None = None) -> Any:
    return NS(index=index, id=id, function=NS(name=name, arguments=arguments))


def test_compatible_server_sends_whole_calls_without_index() -> None:
    state = _StreamState()
    state.add(_chunk([_delta(None, "c1", "a", '{"x": 1}'), _delta(None, "c2", "b", '{"y": 2}')]))
    state.add(_chunk(finish="tool_calls"))
    assert [(c.id, c.name, c.args) for c in state.finish("openai", "http://127.0.0.1").tool_calls] == [
        ("c1", "a", {"x": 1}), ("c2", "b", {"y": 2})]


def test_compatible_server_reuses_index_zero_for_parallel_calls() -> None:
    state = _StreamState()
    state.add(_chunk([_delta(0, "c1", "a", '{"x":')]))
    state.add(_chunk([_delta(0, None, None, " 1}")]))
    state.add(_chunk([_delta(0, "c2", "b", '{"y": 2}')]))
    state.add(_chunk(finish="tool_calls"))
    assert [(c.id, c.name, c.args) for c in state.finish("openai", "http://127.0.0.1").tool_calls] == [
        ("c1", "a", {"x": 1}), ("c2", "b", {"y": 2})]


def test_usage_chunk_without_choices_is_ignored() -> None:
    state = _StreamState()
    assert state.add(_chunk(content="hi", finish="stop")) == "hi"
    assert state.add(NS(choices=[], usage=NS(total_tokens=3))) == ""
    assert state.finish("openai", "http://127.0.0.1") == AssistantMessage(content="hi")
