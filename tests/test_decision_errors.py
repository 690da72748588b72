"""Acceptance 3 of the core issue: every bad resume input of SPEC §4.3 raises the named error
with a helpful message, leaves the thread exactly as it was, and a valid resume then works."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from conftest import StoreFactory
from interlock import (
    Agent,
    Approve,
    Edit,
    EditedAction,
    HumanInTheLoop,
    InterlockError,
    InterruptConflict,
    InterruptOn,
    InvalidDecision,
    NoPendingInterrupt,
    NotAuthorized,
    Reject,
    ScriptedModel,
    SqliteCheckpointer,
    StaleInterrupt,
    ThreadInterrupted,
    ThreadNotFound,
    tool,
)
from seed_agent import DELETE_QUERY, call, make_agent
from transcript import assert_valid_transcript

TURN = [
    call("write_file", {"path": "a.txt", "content": "A"}, "w1"),
    call("execute_sql", {"query": DELETE_QUERY}, "s1"),
]


def dump_thread(path: Path, thread_id: str) -> list[tuple[Any, ...]]:
    """Every stored row of one thread, for byte-for-byte comparisons."""
    conn = sqlite3.connect(path)
    try:
        rows: list[tuple[Any, ...]] = []
        for table in ("interlock_threads", "interlock_messages", "interlock_journal",
                      "interlock_audit"):
            rows += [(table, *r) for r in conn.execute(
                f"SELECT * FROM {table} WHERE thread_id=? ORDER BY 2, 3", (thread_id,))]
        return rows
    finally:
        conn.close()


BAD: list[tuple[str, Any, list[str]]] = [
    ("too few", [{"type": "approve"}], ["got 1 decision", "2 pending", "w1", "s1"]),
    ("too many", [{"type": "approve"}] * 3, ["got 3 decision"]),
    ("unknown id", {"nope": {"type": "approve"}}, ["'nope'", "w1 (write_file)"]),
    ("unknown type", [{"type": "maybe"}, {"type": "approve"}],
     ["'maybe'", "'w1'", "approve, edit, reject, respond"]),
    ("disallowed type", [{"type": "approve"}, {"type": "edit", "edited_action": {
        "name": "execute_sql", "args": {"query": "SELECT 1"}}}],
     ["'edit'", "'s1'", "'execute_sql'", "approve, reject"]),
    ("respond without message", [{"type": "respond"}, {"type": "approve"}],
     ["'respond' without a message", "'w1'"]),
    ("edit to unknown tool", [{"type": "edit", "edited_action": {"name": "rm_rf", "args": {}}},
                              {"type": "approve"}],
     ["'rm_rf'", "Available tools", "write_file"]),
    ("edit args fail schema", [{"type": "edit", "edited_action": {
        "name": "write_file", "args": {"path": 3}}}, {"type": "approve"}],
     ["'w1'", "content", "Field required", "path"]),
    ("edit without edited_action", [{"type": "edit"}, {"type": "approve"}], ["edited_action"]),
    ("not a list", "approve", ["must be a list"]),
    ("position mismatch", [{"type": "approve", "tool_call_id": "s1"}, {"type": "approve"}],
     ["'s1'", "position 1 is call 'w1'"]),
    ("typo field", [{"type": "reject", "mesage": "x"}, {"type": "approve"}], ["mesage"]),
    # a decision is for the call it is given under: one naming the other call is refused,
    # not applied to the call of its key ("approve s1, reject w1" must never run w1)
    ("mapping key mismatch", {"w1": {"type": "approve", "tool_call_id": "s1"},
                              "s1": {"type": "reject", "tool_call_id": "w1"}},
     ["given for call 'w1' names tool_call_id 's1'"]),
    ("mapping key mismatch, typed", {"w1": Approve(tool_call_id="s1")},
     ["given for call 'w1' names tool_call_id 's1'"]),
    ("mapping key mismatch, camel case", {"w1": {"type": "approve", "toolCallId": "s1"}},
     ["given for call 'w1' names tool_call_id 's1'"]),
    ("position mismatch, camel case", [{"type": "approve", "toolCallId": "s1"},
                                       {"type": "approve"}], ["'s1'", "position 1 is call 'w1'"]),
    # other systems' words: Agent Inbox says "accept"; a reason is given as "message"
    ("accept", [{"type": "accept"}, {"type": "approve"}],
     ["'accept'", "Did you mean {'type': 'approve'}?"]),
    ("reason", [{"type": "reject", "reason": "not now"}, {"type": "approve"}],
     ["'reason'", "did you mean 'message' instead of 'reason'?"]),
]


@pytest.mark.parametrize(("label", "decisions", "needles"), BAD, ids=[b[0] for b in BAD])
def test_bad_decision_changes_nothing_then_valid_resume_works(
    tmp_path: Path, label: str, decisions: Any, needles: list[str]
) -> None:
    db = tmp_path / "t.db"
    agent, tools, _ = make_agent([TURN, "done"], SqliteCheckpointer(db))
    paused = agent.invoke("go", thread_id="t")
    before = dump_thread(db, "t")
    with pytest.raises(InvalidDecision) as info:
        agent.resume("t", decisions)
    message = str(info.value)
    assert "thread 't'" in message and "Nothing was changed" in message
    for needle in needles:
        assert needle in message, f"{needle!r} missing from: {message}"
    assert dump_thread(db, "t") == before
    assert tools.counts == {}
    # not poisoned: the same interrupt is answered normally
    done = agent.resume("t", [{"type": "approve"}, {"type": "reject"}],
                        interrupt_id=paused.interrupts[0].id)
    assert done.status == "completed" and tools.counts == {"write_file": 1}
    assert_valid_transcript(done.messages)


def test_decision_for_already_decided_call(stores: StoreFactory) -> None:
    agent, _, _ = make_agent([TURN, "done"], stores())
    agent.invoke("go", thread_id="t")
    agent.resume("t", {"s1": {"type": "reject"}})
    with pytest.raises(InvalidDecision, match=r"'s1' was already decided \(rejected\)"):
        agent.resume("t", {"s1": {"type": "approve"}})
    with pytest.raises(InvalidDecision, match="already decided"):
        agent.resume("t", [{"type": "approve", "tool_call_id": "s1"}])
    assert agent.resume("t", [{"type": "approve"}]).status == "completed"


def test_typed_decision_objects_are_accepted(stores: StoreFactory) -> None:
    agent, tools, _ = make_agent([TURN, "done"], stores())
    agent.invoke("go", thread_id="t")
    done = agent.resume("t", [
        Edit(edited_action=EditedAction(name="write_file", args={"path": "b", "content": "B"})),
        Reject(message="no"),
    ])
    assert done.status == "completed"
    assert tools.executed == [("write_file", {"path": "b", "content": "B"})]


def test_resume_errors_thread_state(stores: StoreFactory) -> None:
    agent, _, _ = make_agent([TURN, "done", "again"], stores())
    with pytest.raises(ThreadNotFound, match="'ghost'"):
        agent.resume("ghost", [{"type": "approve"}])
    first = agent.invoke("go", thread_id="t")
    with pytest.raises(StaleInterrupt, match="'bogus'") as stale:
        agent.resume("t", [Approve(), Reject()], interrupt_id="bogus")
    assert first.interrupts[0].id in str(stale.value)
    with pytest.raises(ThreadInterrupted, match=r"agent.resume\('t'"):
        agent.invoke("new message while paused", thread_id="t")
    agent.resume("t", [Approve(), Reject()])
    with pytest.raises(NoPendingInterrupt, match="no pending interrupt"):
        agent.resume("t", [Approve()])
    # answering an interrupt that was already answered: it lost the race, nothing runs twice
    with pytest.raises(InterruptConflict):
        agent.resume("t", [Approve()], interrupt_id=first.interrupts[0].id)
    assert agent.invoke("more", thread_id="t").output == "again"
    assert isinstance(StaleInterrupt("t", "x", []), InterlockError)


def test_cancel_closes_pending_calls(stores: StoreFactory) -> None:
    agent, tools, _ = make_agent([TURN, "after cancel"], stores())
    agent.invoke("go", thread_id="t")
    cancelled = agent.cancel("t", reason="wrong ticket")
    assert cancelled.status == "completed" and not cancelled.interrupts
    state = agent.get_thread("t")
    assert state.status == "idle"
    results = [m for m in state.messages if m.role == "tool"]
    assert [(m.tool_call_id, m.status, m.decision) for m in results] == [  # type: ignore[union-attr]
        ("w1", "error", "cancel"), ("s1", "error", "cancel")]
    assert "cancelled by a reviewer" in results[0].content and "wrong ticket" in results[0].content
    assert_valid_transcript(state.messages)
    assert tools.counts == {}
    with pytest.raises(NoPendingInterrupt):
        agent.cancel("t")
    # the thread accepts new input afterwards and the transcript stays valid
    done = agent.invoke("next", thread_id="t")
    assert done.output == "after cancel"
    assert_valid_transcript(done.messages)


def test_edit_into_another_tool_respects_its_policy(stores: StoreFactory) -> None:
    @tool
    def send_email(to: str, body: str) -> str:
        """Send an e-mail."""
        return f"sent to {to}"

    @tool
    def draft_email(to: str, body: str) -> str:
        """Save a draft."""
        return f"draft for {to}"

    @tool
    def wire_money(to: str, body: str) -> str:
        """Move money."""
        raise AssertionError("must never run through an edit")

    policy = HumanInTheLoop(interrupt_on={
        "send_email": True,
        "wire_money": InterruptOn(allowed_decisions=["reject"]),
    })
    script = [call("send_email", {"to": "all@corp", "body": "hi"}, "e1"), "ok"]
    agent = Agent(model=ScriptedModel(script), tools=[send_email, draft_email, wire_money],
                  middleware=[policy], checkpointer=stores())
    agent.invoke("mail everyone", thread_id="t")
    with pytest.raises(NotAuthorized, match=r"'wire_money'.*does not allow 'approve'"):
        agent.resume("t", [{"type": "edit", "edited_action": {
            "name": "wire_money", "args": {"to": "me", "body": "1M"}}}])
    done = agent.resume("t", [{"type": "edit", "edited_action": {
        "name": "draft_email", "args": {"to": "team@corp", "body": "hi"}}}])
    result = next(m for m in done.messages if m.role == "tool")
    assert result.name == "draft_email"  # type: ignore[union-attr]
    assert result.content.endswith("draft for team@corp")


def test_sync_api_refuses_inside_event_loop(stores: StoreFactory) -> None:
    agent, _, _ = make_agent(["hi"], stores())

    async def inside() -> None:
        agent.invoke("x", thread_id="t")

    with pytest.raises(InterlockError, match=r"await agent.ainvoke"):
        asyncio.run(inside())
