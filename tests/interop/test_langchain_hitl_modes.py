"""LangChain's HumanInTheLoopMiddleware options that change how a pause is raised and
answered, as LangChain's own tests exercise them, in interlock: ``interrupt_mode="per_call"``,
``edit_notice``, and a bare decision in ``Command(resume=...)``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from interlock import (
    Agent,
    Approve,
    Command,
    ConfigurationError,
    HITLRequest,
    HumanInTheLoop,
    InvalidDecision,
    ScriptedModel,
    ToolMessage,
    tool,
)

NOTICE = ("Note: a human reviewer replaced this tool call before it ran. The call recorded in "
          "your message is the one you produced, not the one that executed. This was "
          "intentional and authorized. Do not re-issue your original call.")


class Files:
    def __init__(self) -> None:
        self.ran: list[tuple[str, str]] = []

        @tool
        def write_file(path: str) -> str:
            """Write a file."""
            self.ran.append(("write_file", path))
            return f"wrote {path}"

        @tool
        def delete_file(path: str) -> str:
            """Delete a file."""
            self.ran.append(("delete_file", path))
            return f"deleted {path}"

        @tool
        def read_file(path: str) -> str:
            """Read a file."""
            self.ran.append(("read_file", path))
            return f"contents of {path}"

        self.tools = [write_file, delete_file, read_file]


TURN = [{"id": "w", "name": "write_file", "args": {"path": "/a"}},
        {"id": "r", "name": "read_file", "args": {"path": "/b"}},
        {"id": "d", "name": "delete_file", "args": {"path": "/c"}}]


def make(files: Files, calls: list[dict[str, Any]] = TURN, **hitl: Any) -> Agent:
    return Agent(model=ScriptedModel([calls, "done"]), tools=files.tools,
                 middleware=[HumanInTheLoop(interrupt_on={
                     "write_file": True,
                     "delete_file": {"allowed_decisions": ["approve", "reject"]},
                 }, **hitl)])


def results(result: Any) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in result.messages if isinstance(m, ToolMessage)}


# ---------------------------------------------------------------- per_call


def test_per_call_raises_one_request_per_gated_call_ungated_run_now() -> None:
    files = Files()
    result = make(files, interrupt_mode="per_call").invoke("go", thread_id="t")
    assert result.interrupted
    assert len(result.interrupts) == 2
    requests = [i.value for i in result.interrupts]
    assert all(isinstance(r, HITLRequest) for r in requests)
    assert [[(a.tool_call_id, a.name) for a in r.action_requests] for r in requests] == [
        [("w", "write_file")], [("d", "delete_file")]]
    assert [r.review_configs[0].allowed_decisions for r in requests] == [
        ["approve", "edit", "reject", "respond"], ["approve", "reject"]]
    assert len({i.id for i in result.interrupts}) == 2
    assert files.ran == [("read_file", "/b")]


def test_per_call_answers_one_interrupt_at_a_time_by_id() -> None:
    files = Files()
    agent = make(files, interrupt_mode="per_call")
    first = agent.invoke("go", thread_id="t")
    write_id, delete_id = (i.id for i in first.interrupts)
    result = agent.invoke(Command(resume={delete_id: {"type": "reject", "message": "no"}}),
                          thread_id="t")
    assert result.interrupted and [i.id for i in result.interrupts] == [write_id]
    assert files.ran == [("read_file", "/b")]
    result = agent.resume("t", {"type": "approve"}, interrupt_id=write_id)
    assert result.status == "completed"
    assert files.ran == [("read_file", "/b"), ("write_file", "/a")]
    out = results(result)
    assert [out[c].status for c in ("w", "r", "d")] == ["success", "success", "error"]
    assert "no" in out["d"].content
    assert list(out) == ["w", "r", "d"]  # results in the model's call order


def test_per_call_several_interrupts_in_one_command_or_by_call_id() -> None:
    files = Files()
    agent = make(files, interrupt_mode="per_call")
    first = agent.invoke("go", thread_id="t")
    ids = [i.id for i in first.interrupts]
    result = agent.invoke(Command(resume={ids[0]: {"type": "approve"},
                                          ids[1]: {"type": "approve"}}), thread_id="t")
    assert result.status == "completed"
    assert sorted(files.ran) == [("delete_file", "/c"), ("read_file", "/b"),
                                 ("write_file", "/a")]

    files = Files()
    agent = make(files, interrupt_mode="per_call")
    agent.invoke("go", thread_id="t")
    result = agent.resume("t", {"d": {"type": "approve"}, "w": {"type": "reject"}})
    assert result.status == "completed"
    assert sorted(files.ran) == [("delete_file", "/c"), ("read_file", "/b")]


def test_per_call_bad_answers_store_nothing() -> None:
    files = Files()
    agent = make(files, interrupt_mode="per_call")
    first = agent.invoke("go", thread_id="t")
    write_id, delete_id = (i.id for i in first.interrupts)
    # a bare decision is ambiguous with two requests pending
    with pytest.raises(InvalidDecision, match="2 'review' interrupts are pending"):
        agent.invoke(Command(resume={"type": "approve"}), thread_id="t")
    # a type the call does not allow
    with pytest.raises(InvalidDecision, match="'edit', which this call does not allow"):
        agent.invoke(Command(resume={delete_id: {"type": "edit", "edited_action": {
            "name": "delete_file", "args": {"path": "/x"}}}}), thread_id="t")
    # edited arguments are checked against the tool's schema when the decision is given
    with pytest.raises(InvalidDecision, match="path: Input should be a valid string"):
        agent.invoke(Command(resume={write_id: {"type": "edit", "edited_action": {
            "name": "write_file", "args": {"path": 5}}}}), thread_id="t")
    # one valid and one invalid answer together: neither is applied (LangChain applies the
    # valid one and raises for the other)
    with pytest.raises(InvalidDecision):
        agent.invoke(Command(resume={write_id: {"type": "approve"},
                                     delete_id: {"type": "respond", "message": "x"}}),
                     thread_id="t")
    assert files.ran == [("read_file", "/b")]
    state = agent.get_thread("t")
    assert [i.id for i in state.interrupts] == [write_id, delete_id]
    result = agent.invoke(Command(resume={write_id: {"type": "approve"},
                                          delete_id: {"type": "approve"}}), thread_id="t")
    assert result.status == "completed"
    assert len(files.ran) == 3


def test_interrupt_mode_is_checked() -> None:
    with pytest.raises(ConfigurationError, match=r"'batched'.*'per_call'"):
        HumanInTheLoop(interrupt_on={"write_file": True}, interrupt_mode="batch")  # type: ignore[arg-type]


def test_batched_mode_stays_one_request_per_turn() -> None:
    result = make(Files()).invoke("go", thread_id="t")
    assert len(result.interrupts) == 1
    assert [a.tool_call_id for a in result.interrupts[0].value.action_requests] == ["w", "d"]


# ---------------------------------------------------------------- edit_notice


EDIT = {"type": "edit", "edited_action": {"name": "write_file", "args": {"path": "/edited"}}}


def edited_result(**hitl: Any) -> ToolMessage:
    files = Files()
    agent = make(files, calls=[TURN[0]], **hitl)
    agent.invoke("go", thread_id="t")
    result = agent.resume("t", [EDIT])
    assert files.ran == [("write_file", "/edited")]
    return results(result)["w"]


def test_default_edit_notice_says_what_ran() -> None:
    msg = edited_result()
    assert msg.decision == "edit"
    assert msg.content.startswith("Note: a reviewer changed this tool call before it ran.")
    assert '`write_file` with arguments {"path": "/edited"}' in msg.content
    assert msg.content.endswith("\n\nTool result:\nwrote /edited")


def test_custom_edit_notice_is_used_as_langchain_uses_it() -> None:
    msg = edited_result(edit_notice=NOTICE)
    assert msg.content == (
        f"{NOTICE} Executed instead: write_file with arguments "
        f"{json.dumps({'path': '/edited'})}.\n\nTool response:\nwrote /edited")


def test_edit_notice_none_adds_nothing() -> None:
    msg = edited_result(edit_notice=None)
    assert (msg.content, msg.decision, msg.status) == ("wrote /edited", "edit", "success")


def test_edit_notice_must_be_text_or_none() -> None:
    with pytest.raises(ConfigurationError, match="edit_notice"):
        HumanInTheLoop(interrupt_on={"write_file": True}, edit_notice=42)  # type: ignore[arg-type]


def test_edit_notice_in_per_call_mode_and_across_a_restart_of_the_agent() -> None:
    files = Files()
    agent = make(files, calls=[TURN[0]], interrupt_mode="per_call", edit_notice="Edited.")
    [intr] = agent.invoke("go", thread_id="t").interrupts
    # the notice is stored with the pause: an agent built later with another notice (e.g.
    # after a deploy) still writes the one the reviewer saw configured
    later = Agent(model=agent.model, tools=files.tools, checkpointer=agent.checkpointer,
                  middleware=[HumanInTheLoop(interrupt_on={"write_file": True})])
    result = later.invoke(Command(resume={intr.id: EDIT}), thread_id="t")
    assert results(result)["w"].content.startswith(
        "Edited. Executed instead: write_file with arguments")


# ---------------------------------------------------------------- Command(resume=decision)


@pytest.mark.parametrize("decision", [{"type": "approve"}, Approve()])
def test_bare_decision_in_command_wherever_resume_takes_it(decision: Any) -> None:
    for entry in ("invoke", "stream", "resume"):
        files = Files()
        agent = make(files, calls=[TURN[0]])
        agent.invoke("go", thread_id="t")
        if entry == "invoke":
            result = agent.invoke(Command(resume=decision), thread_id="t")
        elif entry == "resume":
            result = agent.resume("t", decision)
        else:
            async def go(agent: Agent = agent) -> Any:
                events = [e async for e in agent.astream(Command(resume=decision),
                                                         thread_id="t")]
                return events[-1].result
            result = asyncio.run(go())
        assert result.status == "completed", entry
        assert files.ran == [("write_file", "/a")], entry


def test_bare_decision_shaped_answer_still_answers_a_question() -> None:
    from interlock import interrupt

    @tool
    def ask(question: str) -> str:
        """Ask the user."""
        return json.dumps(interrupt({"question": question}))

    agent = Agent(model=ScriptedModel([{"name": "ask", "args": {"question": "ok?"}}, "done"]),
                  tools=[ask])
    assert agent.invoke("go", thread_id="t").interrupts[0].kind == "input"
    result = agent.invoke(Command(resume={"type": "approve"}), thread_id="t")
    assert results(result)["call_1_0"].content == '{"type": "approve"}'
