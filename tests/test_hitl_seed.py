"""Acceptance 1 of the core issue: the seed document's example, on every backend and entry
point (sync, async, streaming)."""

from __future__ import annotations

import json

from conftest import EntryPoint, StoreFactory
from interlock import AssistantMessage, HITLRequest, ToolMessage
from seed_agent import DELETE_QUERY, call, make_agent
from transcript import assert_valid_transcript, tool_results

REJECT_TEXT = (
    "The user rejected the tool call `{name}` (id {id}). The tool was not executed. "
    "Do not retry it unless the user asks."
)


def test_pause_lists_only_gated_calls_and_runs_ungated_now(
    stores: StoreFactory, entry: EntryPoint
) -> None:
    script = [
        [
            call("read_data", {"table": "records"}, "c1"),
            call("execute_sql", {"query": DELETE_QUERY}, "c2"),
            call("write_file", {"path": "report.txt", "content": "旧记录已清理"}, "c3"),
        ],
        "done",
    ]
    agent, tools, model = make_agent(script, stores())
    result = entry.invoke(agent, "删除数据库中的旧记录", thread_id="t1")

    assert result.interrupted and result.status == "interrupted"
    assert len(result.interrupts) == 1
    request = result.interrupts[0].value
    assert isinstance(request, HITLRequest)
    assert [(a.tool_call_id, a.name) for a in request.action_requests] == [
        ("c2", "execute_sql"),
        ("c3", "write_file"),
    ]
    assert request.action_requests[0].description == "🚨 SQL execution requires DBA approval"
    assert request.action_requests[1].description == (
        "Tool execution pending approval\n\nTool: write_file\nArgs: "
        + json.dumps({"path": "report.txt", "content": "旧记录已清理"}, ensure_ascii=False)
    )
    assert request.review_configs[0].allowed_decisions == ["approve", "reject"]
    assert request.review_configs[1].allowed_decisions == ["approve", "edit", "reject", "respond"]
    assert set(request.review_configs[1].args_schema["properties"]) == {"path", "content"}
    # the ungated call ran immediately; the gated ones did not
    assert tools.counts == {"read_data": 1}
    # results are only added to the conversation once every call of the turn has one
    assert not any(isinstance(m, ToolMessage) for m in result.messages)
    assert model.call_count == 1


def test_approve_runs_with_model_args(stores: StoreFactory, entry: EntryPoint) -> None:
    script = [call("write_file", {"path": "a.txt", "content": "hello"}, "w1"), "written"]
    agent, tools, model = make_agent(script, stores())
    first = entry.invoke(agent, "write hello to a.txt", thread_id="t")
    assert first.interrupted and tools.counts["write_file"] == 0

    done = entry.resume(agent, "t", [{"type": "approve"}])
    assert done.status == "completed" and done.output == "written"
    assert tools.executed == [("write_file", {"path": "a.txt", "content": "hello"})]
    result = tool_results(done.messages)["w1"]
    assert result.status == "success" and result.content == "wrote 5 characters to a.txt"
    assert_valid_transcript(done.messages)
    # the model saw the tool result before giving its final answer
    assert isinstance(model.calls[-1][-1], ToolMessage)


def test_edit_runs_reviewer_args_and_keeps_original_call(
    stores: StoreFactory, entry: EntryPoint
) -> None:
    script = [call("write_file", {"path": "/etc/passwd", "content": "x"}, "w1"), "ok"]
    agent, tools, _ = make_agent(script, stores())
    entry.invoke(agent, "write", thread_id="t")
    done = entry.resume(
        agent, "t",
        [{"type": "edit", "edited_action": {"name": "write_file",
                                            "args": {"path": "/tmp/safe.txt", "content": "x"}}}],
    )
    assert tools.executed == [("write_file", {"path": "/tmp/safe.txt", "content": "x"})]
    assistant = next(m for m in done.messages if isinstance(m, AssistantMessage) and m.tool_calls)
    assert assistant.tool_calls[0].args == {"path": "/etc/passwd", "content": "x"}
    result = tool_results(done.messages)["w1"]
    assert result.decision == "edit" and result.status == "success"
    assert "a reviewer changed this tool call" in result.content
    assert '"/tmp/safe.txt"' in result.content
    assert result.content.endswith("wrote 1 characters to /tmp/safe.txt")
    assert_valid_transcript(done.messages)


def test_reject_without_and_with_message(stores: StoreFactory, entry: EntryPoint) -> None:
    script = [
        [call("execute_sql", {"query": DELETE_QUERY}, "s1"),
         call("execute_sql", {"query": "DROP TABLE t"}, "s2")],
        "I will not delete anything.",
    ]
    agent, tools, model = make_agent(script, stores())
    entry.invoke(agent, "clean up", thread_id="t")
    done = entry.resume(agent, "t", [{"type": "reject"},
                                     {"type": "reject", "message": "需要先备份"}])
    assert tools.counts["execute_sql"] == 0
    results = tool_results(done.messages)
    assert results["s1"].status == "error" and results["s1"].decision == "reject"
    assert results["s1"].content == REJECT_TEXT.format(name="execute_sql", id="s1")
    assert results["s2"].content == (
        REJECT_TEXT.format(name="execute_sql", id="s2") + " Reason: 需要先备份"
    )
    # every call rejected: the model is called again directly
    assert model.call_count == 2 and done.output == "I will not delete anything."
    assert_valid_transcript(done.messages)


def test_respond_returns_message_as_success(stores: StoreFactory, entry: EntryPoint) -> None:
    script = [call("ask_user", {"question": "Which colour?"}, "q1"), "Blue it is."]
    agent, tools, _ = make_agent(script, stores())
    first = entry.invoke(agent, "paint it", thread_id="t")
    assert first.interrupts[0].value.review_configs[0].allowed_decisions == ["respond"]
    done = entry.resume(agent, "t", [{"type": "respond", "message": "蓝色。"}])
    result = tool_results(done.messages)["q1"]
    assert (result.status, result.content, result.decision) == ("success", "蓝色。", "respond")
    assert tools.counts["ask_user"] == 0
    assert done.output == "Blue it is."


def test_three_gated_calls_approve_edit_reject_runs_exactly_two(
    stores: StoreFactory, entry: EntryPoint
) -> None:
    script = [
        [
            call("write_file", {"path": "a.txt", "content": "A"}, "w1"),
            call("write_file", {"path": "b.txt", "content": "B"}, "w2"),
            call("execute_sql", {"query": DELETE_QUERY}, "s1"),
        ],
        "finished",
    ]
    agent, tools, _ = make_agent(script, stores())
    first = entry.invoke(agent, "do three things", thread_id="t")
    assert [a.tool_call_id for a in first.interrupts[0].value.action_requests] == [
        "w1", "w2", "s1"]
    done = entry.resume(agent, "t", [
        {"type": "approve"},
        {"type": "edit", "edited_action": {"name": "write_file",
                                           "args": {"path": "b.txt", "content": "B2"}}},
        {"type": "reject", "message": "not now"},
    ])
    assert tools.counts == {"write_file": 2}
    assert tools.executed == [
        ("write_file", {"path": "a.txt", "content": "A"}),
        ("write_file", {"path": "b.txt", "content": "B2"}),
    ]
    results = tool_results(done.messages)
    assert [results[c].status for c in ("w1", "w2", "s1")] == ["success", "success", "error"]
    assert_valid_transcript(done.messages)
    assert done.output == "finished"


def test_results_keep_call_order_with_mixed_turn(stores: StoreFactory, entry: EntryPoint) -> None:
    script = [
        [
            call("execute_sql", {"query": DELETE_QUERY}, "s1"),
            call("read_data", {"table": "a"}, "r1"),
            call("ask_user", {"question": "ok?"}, "q1"),
            call("read_data", {"table": "b"}, "r2"),
            call("write_file", {"path": "x", "content": "y"}, "w1"),
        ],
        "all done",
    ]
    agent, tools, _ = make_agent(script, stores())
    entry.invoke(agent, "mixed", thread_id="t")
    assert tools.counts == {"read_data": 2}
    done = entry.resume(agent, "t", {
        "w1": {"type": "approve"}, "q1": {"type": "respond", "message": "yes"},
        "s1": {"type": "reject"},
    })
    tool_msgs = [m for m in done.messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in tool_msgs] == ["s1", "r1", "q1", "r2", "w1"]
    assert tools.counts == {"read_data": 2, "write_file": 1}
    assert_valid_transcript(done.messages)
