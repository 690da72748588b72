"""Agents inside agents (issue 18): a sub-agent's requests surface in its parent, decisions
given on the parent are applied by the child's rules, the child's answer becomes the parent's
tool result; parallel children, depth 2, cancel and expiry. Every backend."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from conftest import StoreFactory
from interlock import (
    Agent,
    AssistantMessage,
    CallState,
    Checkpointer,
    Command,
    HITLRequest,
    HumanInTheLoop,
    InterruptConflict,
    InterruptRaised,
    InvalidDecision,
    MemoryCheckpointer,
    Message,
    NotAuthorized,
    PathStep,
    Reviewer,
    RunCompleted,
    ScriptedModel,
    StaleInterrupt,
    StorageError,
    SubAgentMismatch,
    SubAgentThread,
    ThreadBusy,
    ToolContext,
    ToolMessage,
    UserMessage,
    tool,
)
from interlock.leases import HOST
from interlock.storage.base import Commit
from interlock.subagents import child_thread_id
from procs.subagent_team import Effects, build_chain, build_team
from store_faults import CommitFails
from transcript import assert_valid_transcript, tool_results


def _by_tool(result_interrupts: list) -> dict[str, object]:  # type: ignore[type-arg]
    """The parent's pending interrupts keyed by the name of the child's gated tool."""
    out = {}
    for i in result_interrupts:
        if i.kind == "review":
            out[i.value.action_requests[0].name] = i
        else:
            out[i.path[-1].tool_name] = i
    return out


def test_parallel_children_pause_and_resume_independently(stores: StoreFactory) -> None:
    effects = Effects()
    orch, _, _ = build_team(stores(), effects)
    first = orch.invoke("clean up", thread_id="o1")

    # both children paused, the parent shows both requests as its own, with their paths
    assert first.interrupted
    pending = _by_tool(first.interrupts)
    assert set(pending) == {"delete_file", "drop_table"}
    r_thread = child_thread_id("o1", "ask_researcher")
    d_thread = child_thread_id("o1", "ask_dba")
    assert r_thread == "o1@ask_researcher"
    req = pending["delete_file"].value
    assert isinstance(req, HITLRequest)
    action = req.action_requests[0]
    assert action.args == {"path": "notes.txt"}
    assert action.path == [
        PathStep(thread_id="o1", agent="orchestrator", tool_call_id="ask_researcher",
                 tool_name="researcher"),
        PathStep(thread_id=r_thread, agent="researcher", tool_call_id=action.tool_call_id,
                 tool_name="delete_file")]
    assert pending["delete_file"].path == [
        PathStep(thread_id="o1", agent="orchestrator", tool_call_id="ask_researcher",
                 tool_name="researcher"),
        PathStep(thread_id=r_thread, agent="researcher")]
    # the child's own policy shapes the request: dba allows no respond, no remembering
    dba_req = pending["drop_table"].value
    assert dba_req.review_configs[0].allowed_decisions == ["approve", "edit", "reject"]
    assert dba_req.review_configs[0].allow_remember is False
    # the ids are the child's
    assert {i.id for i in orch.get_thread(r_thread).interrupts} == {pending["delete_file"].id}
    assert orch.get_thread("o1").status == "interrupted"
    link = orch.get_thread(r_thread).parent
    assert link is not None and (link.thread_id, link.tool_call_id, link.tool_name,
                                 link.agent) == ("o1", "ask_researcher", "researcher",
                                                 "orchestrator")
    assert orch.get_thread("o1").parent is None
    assert effects.counts() == {}

    # the child's rules validate the decision: dba does not allow "respond"
    with pytest.raises(InvalidDecision, match="respond"):
        orch.resume("o1", [{"type": "respond", "message": "x"}],
                    interrupt_id=pending["drop_table"].id)
    with pytest.raises(InvalidDecision, match="remember"):
        orch.resume("o1", [{"type": "approve", "remember": "thread"}],
                    interrupt_id=pending["drop_table"].id)

    # approving the researcher's call runs only that tool, once; the parent waits for dba
    second = orch.resume("o1", [{"type": "approve"}], interrupt_id=pending["delete_file"].id)
    assert second.interrupted
    assert [i.id for i in second.interrupts] == [pending["drop_table"].id]
    assert effects.counts() == {"delete_file": 1}
    assert orch.get_thread(r_thread).status == "completed"
    journal = {e.tool_call_id: e for e in orch.journal("o1")}
    assert journal["ask_researcher"].state == CallState.SUCCEEDED
    assert journal["ask_researcher"].result is not None
    assert journal["ask_researcher"].result.content == "researcher: deleted notes.txt"
    assert journal["ask_dba"].state == CallState.WAITING
    assert journal["ask_dba"].child_thread == d_thread

    # a decided request cannot be decided again through the parent
    with pytest.raises(InterruptConflict):
        orch.resume("o1", [{"type": "approve"}], interrupt_id=pending["delete_file"].id)

    # rejecting dba's call with a message: the child gets the message, the parent finishes
    final = orch.resume("o1", [{"type": "reject", "message": "not the users table"}],
                        interrupt_id=pending["drop_table"].id)
    assert final.status == "completed"
    assert effects.counts() == {"delete_file": 1}
    assert final.output is not None
    assert "researcher=researcher: deleted notes.txt" in final.output
    assert "not the users table" in final.output
    dba_messages = orch.get_thread(d_thread).messages
    rejected = list(tool_results(dba_messages).values())
    assert len(rejected) == 1 and rejected[0].status == "error"
    assert "not the users table" in rejected[0].content

    # transcripts of both levels are valid; each call has exactly one result
    for thread in ("o1", r_thread, d_thread):
        assert_valid_transcript(orch.get_thread(thread).messages)
    assert set(tool_results(final.messages)) == {"ask_researcher", "ask_dba"}
    assert orch.get_thread("o1").interrupts == []


def test_edit_in_a_child_runs_the_edited_call(stores: StoreFactory) -> None:
    effects = Effects()
    orch, _, _ = build_team(stores(), effects)
    pending = _by_tool(orch.invoke("clean up", thread_id="o2").interrupts)
    call_id = pending["drop_table"].value.action_requests[0].tool_call_id
    edit = {"type": "edit", "edited_action": {"name": "drop_table", "args": {"name": "tmp"}}}
    # both children numbered their call the same way: a mapping without the interrupt id
    # cannot say which one it means
    assert call_id == pending["delete_file"].value.action_requests[0].tool_call_id
    with pytest.raises(InvalidDecision, match="interrupt_id"):
        orch.resume("o2", {call_id: edit})
    assert effects.counts() == {}
    # decisions may also be given as a mapping by the child's tool call id
    orch.resume("o2", {call_id: edit}, interrupt_id=pending["drop_table"].id)
    assert effects.all() == [f"drop_table|o2@ask_dba|{call_id}|tmp"]
    # LangChain's Command(resume={interrupt_id: ...}) on the parent reaches the child too
    final = orch.invoke(Command(resume={pending["delete_file"].id: {
        "decisions": [{"type": "approve"}]}}), thread_id="o2")
    assert final.status == "completed"
    assert effects.counts() == {"drop_table": 1, "delete_file": 1}
    assert "dba=dba:" in (final.output or "") and "tmp" in (final.output or "")


def test_child_roles_apply_to_decisions_on_the_parent(stores: StoreFactory) -> None:
    effects = Effects()
    orch, _, _ = build_team(stores(), effects, reviewers=["dba"])
    pending = _by_tool(orch.invoke("clean up", thread_id="o3").interrupts)
    assert pending["drop_table"].value.review_configs[0].reviewers == ["dba"]
    with pytest.raises(NotAuthorized):
        orch.resume("o3", [{"type": "approve"}], interrupt_id=pending["drop_table"].id,
                    reviewer=Reviewer("mallory", roles=["dev"]))
    assert effects.counts() == {}
    orch.resume("o3", [{"type": "approve"}], interrupt_id=pending["drop_table"].id,
                reviewer=Reviewer("dora", roles=["dba"]))
    assert effects.counts() == {"drop_table": 1}
    decision = [r for r in orch.audit("o3@ask_dba") if r.kind == "decision"]
    assert [(r.actor, r.data["via_thread_id"]) for r in decision] == [("dora", "o3")]
    routed = [r for r in orch.audit("o3") if r.kind == "decision_routed"]
    assert [(r.actor, r.data["child_thread_id"]) for r in routed] == [("dora", "o3@ask_dba")]


def test_depth_two_question_at_the_bottom_answered_on_the_top(stores: StoreFactory) -> None:
    effects = Effects()
    boss, _, _ = build_chain(stores(), effects)
    first = boss.invoke("do the kitchen", thread_id="b1")
    assert first.interrupted and len(first.interrupts) == 1
    question = first.interrupts[0]
    assert question.kind == "input"
    assert question.value == {"question": "Which colour for the kitchen?"}
    m_thread = child_thread_id("b1", "ask_manager")
    manager_call = next(e for e in boss.journal(m_thread))
    p_thread = child_thread_id(m_thread, manager_call.tool_call_id)
    assert question.path is not None and len(question.path) == 3
    assert [(s.thread_id, s.agent, s.tool_name) for s in question.path] == [
        ("b1", "boss", "manager"), (m_thread, "manager", "painter"),
        (p_thread, "painter", "paint")]
    # same question id at every level
    assert [i.id for i in boss.get_thread(m_thread).interrupts] == [question.id]
    assert [i.id for i in boss.get_thread(p_thread).interrupts] == [question.id]

    done = boss.resume("b1", value="green", interrupt_id=question.id)
    assert done.status == "completed"
    assert done.output == "boss: manager: painter: painted the kitchen green"
    assert effects.counts() == {"paint": 1}
    for thread in ("b1", m_thread, p_thread):
        state = boss.get_thread(thread)
        assert state.status == "completed" and state.interrupts == []
        assert_valid_transcript(state.messages)
    assert boss.get_thread(p_thread).messages[0].content == "kitchen"
    answered = [r for r in boss.audit(p_thread) if r.kind == "input_answered"]
    assert [r.data["via_thread_id"] for r in answered] == [m_thread]


def test_a_child_thread_is_driven_only_through_its_parent(stores: StoreFactory) -> None:
    effects = Effects()
    orch, researcher, _ = build_team(stores(), effects)
    pending = _by_tool(orch.invoke("clean up", thread_id="o4").interrupts)
    r_thread = "o4@ask_researcher"
    with pytest.raises(SubAgentThread, match="o4"):
        researcher.resume(r_thread, [{"type": "approve"}])
    with pytest.raises(SubAgentThread):
        orch.resume(r_thread, [{"type": "approve"}], interrupt_id=pending["delete_file"].id)
    with pytest.raises(SubAgentThread):
        researcher.invoke("more", thread_id=r_thread)
    with pytest.raises(SubAgentThread):
        researcher.cancel(r_thread)
    # recovering a child with the child's agent is refused: the parent's agent settles it
    with pytest.raises(SubAgentThread, match="orchestrator"):
        researcher.recover(r_thread)
    assert effects.counts() == {}
    assert orch.recover(r_thread).interrupted  # through the parent: nothing to do yet


def test_cancel_propagates_to_children(stores: StoreFactory) -> None:
    effects = Effects()
    orch, _, _ = build_team(stores(), effects)
    pending = _by_tool(orch.invoke("clean up", thread_id="o5").interrupts)
    result = orch.cancel("o5", reason="changed my mind")
    assert not result.interrupts
    for thread in ("o5@ask_researcher", "o5@ask_dba"):
        state = orch.get_thread(thread)
        assert state.status == "idle" and state.interrupts == []
        assert_valid_transcript(state.messages)
    state = orch.get_thread("o5")
    assert state.status == "idle" and state.interrupts == []
    assert_valid_transcript(state.messages)
    journal = {e.tool_call_id: e.state for e in orch.journal("o5")}
    assert journal == {"ask_researcher": CallState.CANCELLED, "ask_dba": CallState.CANCELLED}
    with pytest.raises(StaleInterrupt):
        orch.resume("o5", [{"type": "approve"}], interrupt_id=pending["delete_file"].id)
    assert effects.counts() == {}


def test_expiry_in_a_child_resolves_the_call_and_the_parent_continues(
        stores: StoreFactory) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    effects = Effects()
    store = stores()
    orch, researcher, dba = build_team(store, effects, expires_after=timedelta(minutes=5))
    for agent in (orch, researcher, dba):
        agent.clock = lambda: now[0]
    pending = _by_tool(orch.invoke("clean up", thread_id="o6").interrupts)
    # the parent's request carries the child's deadline (the deadline index finds it)
    assert pending["drop_table"].value.review_configs[0].expires_at is not None
    assert orch.expire_due() == []
    now[0] += timedelta(minutes=6)
    results = orch.expire_due()
    # found through the deadline index (child and parent are due; the parent settles both)
    assert [r.thread_id for r in results] == ["o6"]
    # the parent's request is updated: dba's call expired, the researcher's still waits
    assert [i.id for i in results[0].interrupts] == [pending["delete_file"].id]
    child = {e.tool_call_id: e.state for e in orch.journal("o6@ask_dba")}
    assert list(child.values()) == [CallState.EXPIRED]
    assert orch.get_thread("o6@ask_dba").status == "completed"
    assert {e.tool_call_id: e.state for e in orch.journal("o6")} == {
        "ask_researcher": CallState.WAITING, "ask_dba": CallState.SUCCEEDED}
    assert orch.expire_due() == []
    final = orch.resume("o6", [{"type": "approve"}], interrupt_id=pending["delete_file"].id)
    assert final.status == "completed"
    assert "dba=dba:" in (final.output or "") and "No reviewer decided in time" in (final.output or "")
    assert effects.counts() == {"delete_file": 1}
    assert orch.get_thread("o6").status == "completed"


def test_a_sub_agent_must_share_the_checkpointer() -> None:
    child = Agent(name="child", model=ScriptedModel(["x"]), checkpointer=MemoryCheckpointer())
    with pytest.raises(SubAgentMismatch, match="same checkpointer"):
        Agent(model=ScriptedModel(["y"]), tools=[child.as_tool()],
              checkpointer=MemoryCheckpointer())
    # without a checkpointer the parent uses its sub-agents'
    parent = Agent(model=ScriptedModel(["y"]), tools=[child.as_tool()])
    assert parent.checkpointer is child.checkpointer


def _boss(stores: StoreFactory, effects: Effects, gate: dict[str, bool]) -> Agent:
    """A parent with its own ``notify`` tool next to the researcher; one turn calls both."""
    store = stores()
    _, researcher, _ = build_team(store, effects)

    @tool
    def notify(text: str) -> str:
        """Tell the team."""
        effects.add(f"notify|{text}")
        return "sent"

    def script(messages: list[Message]) -> object:
        if isinstance(messages[-1], UserMessage):
            return [{"name": "researcher", "args": {"task": "a.txt"}, "id": "r1"},
                    {"name": "notify", "args": {"text": "cleaning"}, "id": "n1"}]
        return "ok: " + " | ".join(m.content for m in messages if isinstance(m, ToolMessage))

    return Agent(name="boss", model=ScriptedModel(script), checkpointer=store,
                 tools=[researcher.as_tool(), notify],
                 middleware=[HumanInTheLoop(interrupt_on=gate)])


def test_own_request_and_child_request_in_one_turn(stores: StoreFactory) -> None:
    """The parent gates its own tool and the sub-agent call itself: its own requests and the
    child's are answered separately, each by its own rules."""
    effects = Effects()
    boss = _boss(stores, effects, {"researcher": True, "notify": True})
    first = boss.invoke("go", thread_id="m1")
    # the sub-agent call itself is gated on the parent: nothing of the child ran yet
    [own] = first.interrupts
    assert [a.name for a in own.value.action_requests] == ["researcher", "notify"]
    assert own.path is None
    second = boss.resume("m1", [{"type": "approve"}, {"type": "approve"}])
    assert effects.counts() == {"notify": 1}
    [child] = second.interrupts
    assert child.path is not None and child.path[0].tool_call_id == "r1"
    assert boss.get_thread("m1").status == "interrupted"
    final = boss.resume("m1", [{"type": "approve"}], interrupt_id=child.id)
    assert final.status == "completed"
    assert final.output == "ok: researcher: deleted a.txt | sent"
    assert effects.counts() == {"notify": 1, "delete_file": 1}
    assert_valid_transcript(final.messages)


def test_an_own_and_a_child_request_cannot_be_answered_together(stores: StoreFactory) -> None:
    effects = Effects()
    boss = _boss(stores, effects, {"notify": True})
    first = boss.invoke("go", thread_id="m2")
    own = next(i for i in first.interrupts if i.path is None)
    child = next(i for i in first.interrupts if i.path is not None)
    with pytest.raises(InvalidDecision, match="its own resume"):
        boss.invoke(Command(resume={own.id: {"decisions": [{"type": "approve"}]},
                                    child.id: {"decisions": [{"type": "approve"}]}}),
                    thread_id="m2")
    assert effects.counts() == {}
    assert boss.resume("m2", [{"type": "approve"}], interrupt_id=own.id).interrupted
    assert boss.resume("m2", [{"type": "approve"}], interrupt_id=child.id).status == "completed"
    assert effects.counts() == {"notify": 1, "delete_file": 1}


def test_child_quorum_counts_approvals_given_on_the_parent(stores: StoreFactory) -> None:
    effects = Effects()
    orch, _, _ = build_team(stores(), effects, approvals=2)
    pending = _by_tool(orch.invoke("clean up", thread_id="q1").interrupts)
    iid = pending["drop_table"].id
    first = orch.resume("q1", [{"type": "approve"}], interrupt_id=iid, reviewer="ann")
    # one approval of two: the request stays, on both threads, with the approval recorded
    still = _by_tool(first.interrupts)["drop_table"]
    assert still.id == iid
    assert [a.by for a in still.value.review_configs[0].approved_by or []] == ["ann"]
    assert effects.counts() == {}
    with pytest.raises(InvalidDecision, match="ann"):  # the same person cannot count twice
        orch.resume("q1", [{"type": "approve"}], interrupt_id=iid, reviewer="ann")
    orch.resume("q1", [{"type": "approve"}], interrupt_id=iid, reviewer="ben")
    assert effects.counts() == {"drop_table": 1}
    assert iid not in {i.id for i in orch.get_thread("q1").interrupts}


def test_a_child_decided_while_another_process_holds_the_parent(stores: StoreFactory) -> None:
    """The parent is held by another (live) process: a decision on a child's request still
    goes to the child, which runs; the parent reads the outcome when it is next settled."""
    effects = Effects()
    orch, _, _ = build_team(stores(), effects)
    pending = _by_tool(orch.invoke("clean up", thread_id="h1").interrupts)
    store = orch.checkpointer
    _hold(store, "h1")

    result = orch.resume("h1", [{"type": "approve"}], interrupt_id=pending["delete_file"].id)
    assert result.interrupted  # the parent could not be settled: it is held
    assert effects.counts() == {"delete_file": 1}
    assert orch.get_thread("h1@ask_researcher").status == "completed"
    assert orch.get_thread("h1").status == "running"
    # the same request again: the child knows it was answered
    with pytest.raises(InterruptConflict):
        orch.resume("h1", [{"type": "approve"}], interrupt_id=pending["delete_file"].id)

    # the holder goes away (its lease ends); recovery settles the parent from the children
    snap = asyncio.run(store.load("h1"))
    assert snap is not None
    t = snap.thread
    gone = t.model_copy(update={"version": t.version + 1, "lease_owner": None,
                                "lease_until": None})
    asyncio.run(store.commit(Commit(thread=gone), expected_version=t.version))
    [recovered] = [r for r in orch.recover_stale() if r.thread_id == "h1"]
    assert [i.id for i in recovered.interrupts] == [pending["drop_table"].id]
    journal = {e.tool_call_id: e.state for e in orch.journal("h1")}
    assert journal == {"ask_researcher": CallState.SUCCEEDED, "ask_dba": CallState.WAITING}
    final = orch.resume("h1", [{"type": "approve"}], interrupt_id=pending["drop_table"].id)
    assert final.status == "completed"
    assert effects.counts() == {"delete_file": 1, "drop_table": 1}
    assert_valid_transcript(final.messages)


def test_streaming_the_parent_announces_the_children_requests(stores: StoreFactory) -> None:
    effects = Effects()
    orch, _, _ = build_team(stores(), effects)
    events = list(orch.stream("clean up", thread_id="s1"))
    raised = [e.interrupt for e in events if isinstance(e, InterruptRaised)]
    assert [(i.path[0].tool_call_id if i.path else None) for i in raised] == [
        "ask_researcher", "ask_dba"]
    assert {i.id for i in raised} == {i.id for i in orch.get_thread("s1").interrupts}
    done = events[-1]
    assert isinstance(done, RunCompleted) and done.result.interrupted
    resumed = list(orch.stream(Command(resume={raised[0].id: {
        "decisions": [{"type": "approve"}]}}), thread_id="s1"))
    assert not [e for e in resumed if isinstance(e, InterruptRaised)]  # nothing new to show
    assert effects.counts() == {"delete_file": 1}


def _hold(store: Checkpointer, thread_id: str) -> None:
    """Mark ``thread_id`` as advanced right now by another live process."""
    snap = asyncio.run(store.load(thread_id))
    assert snap is not None
    t = snap.thread
    held = t.model_copy(update={"status": "running", "version": t.version + 1,
                                "lease_owner": f"{HOST}|{os.getppid()}|other",
                                "lease_until": datetime.now(UTC) + timedelta(minutes=5)})
    asyncio.run(store.commit(Commit(thread=held), expected_version=t.version))


def test_cancel_refused_while_a_child_is_advanced_elsewhere(stores: StoreFactory) -> None:
    effects = Effects()
    orch, _, _ = build_team(stores(), effects)
    orch.invoke("clean up", thread_id="c1")
    _hold(orch.checkpointer, "c1@ask_dba")
    with pytest.raises(ThreadBusy):
        orch.cancel("c1")
    # nothing was cancelled: not the other child, not the parent's calls
    assert orch.get_thread("c1").status == "interrupted"
    assert orch.get_thread("c1@ask_researcher").status == "interrupted"
    assert {e.state for e in orch.journal("c1")} == {CallState.WAITING}


def test_audit_of_parent_and_children_verifies(stores: StoreFactory) -> None:
    effects = Effects()
    orch, _, _ = build_team(stores(), effects)
    pending = _by_tool(orch.invoke("clean up", thread_id="a1").interrupts)
    orch.resume("a1", [{"type": "approve"}], interrupt_id=pending["drop_table"].id)
    orch.resume("a1", [{"type": "reject"}], interrupt_id=pending["delete_file"].id)
    orch.invoke("clean up", thread_id="a2")
    orch.cancel("a2")
    assert orch.verify_audit() == []
    started = [r for r in orch.audit("a1@ask_dba") if r.kind == "subagent_started"]
    assert [(r.data["parent_thread_id"], r.data["parent_tool_call_id"]) for r in started] == [
        ("a1", "ask_dba")]
    waiting = [r.data["child_thread_id"] for r in orch.audit("a1")
               if r.kind == "subagent_waiting"]
    finished = [r.data["child_thread_id"] for r in orch.audit("a1")
                if r.kind == "tool_finished"]
    assert waiting == ["a1@ask_researcher", "a1@ask_dba"]
    assert finished == ["a1@ask_dba", "a1@ask_researcher"]


def test_a_decision_stored_in_the_child_whose_answer_was_lost_leaves_no_stale_request(
        stores: StoreFactory) -> None:
    """Invariant 2: the reviewer's decision reached the sub-agent's thread but its answer was
    lost. Resending it is refused (it was stored already), and the parent no longer shows a
    request that every resume would be refused: it reads its sub-agent and completes; the
    tool ran once."""
    ran: list[int] = []

    @tool
    def work(n: int) -> str:
        """Do work n."""
        ran.append(n)
        return f"worked {n}"

    def child_reply(messages: Any) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return f"finished: {messages[-1].content}"
        return {"name": "work", "args": {"n": 1}, "id": "w1"}

    def parent_reply(messages: Any) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return f"parent done: {messages[-1].content}"
        return {"name": "helper", "args": {"task": "do it"}, "id": "p1"}

    # the commit storing the child's call w1 as approved lands; its answer is lost
    store = CommitFails(stores(), lambda change: any(
        e.tool_call_id == "w1" and e.state == CallState.APPROVED for e in change.journal),
        lands=True, once=True)
    child = Agent(name="helper", model=ScriptedModel(child_reply), tools=[work],
                  middleware=[HumanInTheLoop(interrupt_on={"work": True})], checkpointer=store)
    parent = Agent(name="boss", model=ScriptedModel(parent_reply), tools=[child.as_tool()],
                   checkpointer=store)
    shown = parent.invoke("go", thread_id="t1").interrupts[0].id
    with pytest.raises(StorageError, match="answer to this write was lost"):
        parent.resume("t1", [{"type": "approve"}], interrupt_id=shown)
    with pytest.raises(InterruptConflict):  # the reviewer sends it again
        parent.resume("t1", [{"type": "approve"}], interrupt_id=shown)
    state = parent.get_thread("t1")
    assert state.status == "completed" and state.interrupts == []
    assert state.messages[-1].content == "parent done: finished: worked 1"
    assert parent.list_threads(status="interrupted") == [] and ran == [1]


def test_a_call_id_of_one_sub_agent_never_decides_another_sub_agents_call(
        stores: StoreFactory) -> None:
    """Invariant 1: two sub-agents of one turn number their calls on their own (``k0``,
    ``k1`` in each). bob is shown B's ``k1`` (``pay``); alice rejects it, and A's next call,
    also ``k1`` (``wipe``), appears. bob's approval keyed by ``k1`` without the request's id
    would run ``wipe``, which he never saw: refused (InvalidDecision, pass interrupt_id),
    nothing stored or run; with the request's id it decides exactly that request."""
    ran: list[tuple[str, str]] = []

    def gated(name: str) -> Any:
        def run(v: int, ctx: ToolContext) -> str:
            ran.append((ctx.thread_id, name))
            return "ok"

        run.__name__ = run.__doc__ = name
        return tool(run)

    plans = {"A": [("note", 1), ("wipe", 9)], "B": [("note", 1), ("pay", 1)]}

    def kid_model(messages: Any) -> Any:
        task = next(m.content for m in messages if isinstance(m, UserMessage))
        k = sum(isinstance(m, AssistantMessage) for m in messages)
        if k < len(plans[task]):
            name, v = plans[task][k]
            return [{"name": name, "args": {"v": v}, "id": f"k{k}"}]
        return "kid done"

    def boss_model(messages: Any) -> Any:
        if sum(isinstance(m, AssistantMessage) for m in messages) == 0:
            return [{"name": "kid", "args": {"task": t}, "id": f"p_{t}"} for t in "AB"]
        return "done"

    store = stores()
    kid = Agent(name="kid", model=ScriptedModel(kid_model),
                tools=[gated("note"), gated("pay"), gated("wipe")],
                middleware=[HumanInTheLoop(interrupt_on={"note": True, "pay": True,
                                                         "wipe": True})], checkpointer=store)
    boss = Agent(name="boss", model=ScriptedModel(boss_model), tools=[kid.as_tool()],
                 checkpointer=store)
    alice, bob = Reviewer("alice", frozenset()), Reviewer("bob", frozenset())

    def request(thread: str, call: str) -> str:
        return next(i.id for i in boss.get_thread("t").interrupts for a in
                    i.value.action_requests if (a.path[-1].thread_id, a.tool_call_id)
                    == (thread, call))

    boss.invoke("go", thread_id="t", reviewer=alice)
    boss.resume("t", {"k0": {"type": "approve"}}, interrupt_id=request("t@p_B", "k0"),
                reviewer=alice)
    shown_to_bob = request("t@p_B", "k1")
    boss.resume("t", {"k1": {"type": "reject"}}, interrupt_id=shown_to_bob, reviewer=alice)
    boss.resume("t", {"k0": {"type": "approve"}}, interrupt_id=request("t@p_A", "k0"),
                reviewer=alice)
    version, before = boss.get_thread("t").version, list(ran)
    with pytest.raises(InvalidDecision, match="pass interrupt_id"):
        boss.resume("t", {"k1": {"type": "approve", "revision": 1}}, reviewer=bob)
    assert ran == before and ("t@p_A", "wipe") not in ran
    assert boss.get_thread("t").version == version
    with pytest.raises((StaleInterrupt, InterruptConflict)):  # bob's request is gone
        boss.resume("t", {"k1": {"type": "approve"}}, interrupt_id=shown_to_bob, reviewer=bob)
    assert ("t@p_A", "wipe") not in ran
