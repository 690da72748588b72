"""Acceptance 2 of the core issue: the Spring AI article's flow — call, interrupted with
pending calls, resume with feedback, interrupted again, finished — and "approve and remember
for this thread" (the article's approvedToolNames / consumedToolCallIds)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from conftest import EntryPoint, StoreFactory
from interlock import (
    AssistantMessage,
    InvalidDecision,
    Message,
    ScriptedModel,
    ToolMessage,
    UserMessage,
)
from seed_agent import call, make_agent
from transcript import assert_valid_transcript, tool_results


def weather_script(messages: Sequence[Message]) -> object:
    """A model that keeps writing files until a write succeeds, like a ReAct agent."""
    last = messages[-1]
    n = sum(isinstance(m, AssistantMessage) for m in messages)
    if isinstance(last, UserMessage):
        return [call("write_file", {"path": f"note{n}.txt", "content": last.content}, f"w{n}")]
    assert isinstance(last, ToolMessage)
    if last.status == "error":
        # rejected with feedback: try again, following the reviewer's advice
        return [call("write_file", {"path": "notes/retry.txt", "content": "retry"}, f"w{n}")]
    return f"saved ({last.content})"


def test_interrupted_feedback_interrupted_again_finished(
    stores: StoreFactory, entry: EntryPoint
) -> None:
    agent, tools, _model = make_agent(ScriptedModel(weather_script), stores())
    r1 = entry.invoke(agent, "记录今天的天气", thread_id="s")
    assert r1.interrupted
    pending = r1.interrupts[0].value.action_requests
    assert [(p.tool_call_id, p.name) for p in pending] == [("w0", "write_file")]

    r2 = entry.resume(agent, "s", [{"type": "reject", "message": "use the notes/ folder"}])
    assert r2.interrupted, "the model tried again and was paused again"
    assert r2.interrupts[0].id != r1.interrupts[0].id
    assert r2.interrupts[0].value.action_requests[0].args["path"] == "notes/retry.txt"
    feedback = tool_results(r2.messages)["w0"]
    assert "use the notes/ folder" in feedback.content

    r3 = entry.resume(agent, "s", [{"type": "approve"}])
    assert r3.status == "completed" and r3.output == "saved (wrote 5 characters to notes/retry.txt)"
    assert tools.counts == {"write_file": 1}
    assert_valid_transcript(r3.messages)


def test_approve_and_remember_lets_later_calls_through(
    stores: StoreFactory, entry: EntryPoint
) -> None:
    agent, tools, _ = make_agent(ScriptedModel(weather_script), stores())
    r1 = entry.invoke(agent, "first", thread_id="s")
    first_call = r1.interrupts[0].value.action_requests[0].tool_call_id
    done = entry.resume(agent, "s", [{"type": "approve", "remember": "thread"}])
    assert done.status == "completed"

    rules = agent.remembered("s")
    assert [(r.tool_name, r.scope, r.tool_call_id) for r in rules] == [
        ("write_file", "thread", first_call)
    ]
    # the next call of the same tool in this thread runs without pausing ...
    r2 = entry.invoke(agent, "second", thread_id="s")
    assert r2.status == "completed"
    assert tools.counts["write_file"] == 2
    # ... and the audit log says which rule let it through
    auto = [a for a in agent.audit("s") if a.kind == "auto_approved"]
    assert len(auto) == 1
    assert auto[0].actor == "rule:remember:thread:write_file"
    assert auto[0].data["args"]["content"] == "second"

    # other threads are not affected
    r_other = entry.invoke(agent, "elsewhere", thread_id="other")
    assert r_other.interrupted

    # a remembered approval can be revoked; the tool pauses again
    assert agent.revoke("s", "write_file") is True
    assert agent.remembered("s") == []
    assert agent.revoke("s", "write_file") is False
    r3 = entry.invoke(agent, "third", thread_id="s")
    assert r3.interrupted
    assert [a.kind for a in agent.audit("s")].count("rule_revoked") == 1


def test_remember_only_with_approve_and_each_call_decided_once(stores: StoreFactory) -> None:
    script = [[call("write_file", {"path": "a", "content": "1"}, "a1"),
               call("write_file", {"path": "b", "content": "2"}, "b1")], "ok"]
    agent, tools, _ = make_agent(script, stores())
    agent.invoke("go", thread_id="s")
    with pytest.raises(InvalidDecision, match="remember"):
        agent.resume("s", {"a1": {"type": "reject", "remember": "thread"}})
    with pytest.raises(InvalidDecision, match="'thread'"):
        agent.resume("s", {"a1": {"type": "approve", "remember": "forever"}})
    # partial resolution: decide a1 only; b1 stays pending
    partial = agent.resume("s", {"a1": {"type": "approve"}})
    assert partial.interrupted
    assert [a.tool_call_id for a in partial.interrupts[0].value.action_requests] == ["b1"]
    assert tools.counts["write_file"] == 1
    # a1 was consumed: deciding it again is refused, nothing runs twice
    with pytest.raises(InvalidDecision, match="already decided"):
        agent.resume("s", {"a1": {"type": "approve"}})
    done = agent.resume("s", {"b1": {"type": "approve"}})
    assert done.status == "completed" and tools.counts["write_file"] == 2
    assert_valid_transcript(done.messages)
