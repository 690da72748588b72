"""Expiry of pending approvals (SPEC §4.7), driven by a fake clock.

A gated call with ``InterruptOn(expires_after=...)`` that nobody decides in time is rejected
exactly once — by ``agent.expire_due()``, by the server's sweeper, or when the thread is next
touched — audited as ``system:expiry``; the model receives the "no reviewer decided in time"
result and the run continues. A decision that arrives afterwards is refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from interlock import (
    Agent,
    AssistantMessage,
    CallSettled,
    CallState,
    HumanInTheLoop,
    InterruptConflict,
    InterruptOn,
    NoPendingInterrupt,
    ScriptedModel,
    SqliteCheckpointer,
    StaleInterrupt,
    ThreadInterrupted,
    ToolMessage,
    UserMessage,
    tool,
)

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
DEADLINE = timedelta(minutes=10)
EXPIRED_PREFIX = "No reviewer decided in time on the tool call `purge`"


@dataclass
class Clock:
    now: datetime = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


@dataclass
class Env:
    agent: Agent
    model: ScriptedModel
    clock: Clock
    ran: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def _model_reply(messages: Any) -> Any:
    """purge → (after its result) a final text that quotes the tool result it saw."""
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
    tail = messages[last_user + 1:]
    results = [m for m in tail if isinstance(m, ToolMessage)]
    if not any(isinstance(m, AssistantMessage) for m in tail):
        task = messages[last_user].content
        if task.startswith("both"):
            return [{"name": "purge", "args": {"table": "a"}},
                    {"name": "archive", "args": {"table": "a"}}]
        return {"name": "purge", "args": {"table": task}}
    return "saw: " + " | ".join(r.content for r in results)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    ran: list[tuple[str, dict[str, Any]]] = []

    @tool
    def purge(table: str) -> str:
        """Delete every row of a table."""
        ran.append(("purge", {"table": table}))
        return f"purged {table}"

    @tool
    def archive(table: str) -> str:
        """Archive a table."""
        ran.append(("archive", {"table": table}))
        return f"archived {table}"

    clock = Clock()
    model = ScriptedModel(_model_reply)
    agent = Agent(
        model=model, tools=[purge, archive], clock=clock,
        middleware=[HumanInTheLoop(interrupt_on={
            "purge": InterruptOn(allowed_decisions=["approve", "reject"],
                                 expires_after=DEADLINE),
            "archive": True,  # no deadline
        })],
        checkpointer=SqliteCheckpointer(tmp_path / "interlock.db"),
    )
    yield Env(agent, model, clock, ran)
    agent.close()


def _expired_rows(agent: Agent, thread_id: str) -> list[Any]:
    return [r for r in agent.audit(thread_id) if r.kind == "expired"]


def test_deadline_is_in_the_request(env: Env) -> None:
    result = env.agent.invoke("orders", thread_id="t1")
    assert result.interrupted
    config = result.interrupts[0].value.review_configs[0]
    assert config.expires_at == T0 + DEADLINE


def test_expire_due_rejects_once_audits_and_continues(env: Env) -> None:
    agent = env.agent
    first = agent.invoke("orders", thread_id="t1")
    interrupt_id = first.interrupts[0].id

    env.clock.advance(DEADLINE - timedelta(seconds=1))
    assert agent.expire_due() == []
    assert agent.get_thread("t1").status == "interrupted"
    assert _expired_rows(agent, "t1") == []

    env.clock.advance(timedelta(seconds=2))
    results = agent.expire_due()
    assert [r.thread_id for r in results] == ["t1"]
    assert results[0].status == "completed"
    assert env.ran == []  # the purge never ran

    state = agent.get_thread("t1")
    assert state.status == "completed"
    [entry] = agent.journal("t1")
    assert entry.state == CallState.EXPIRED
    assert entry.decided_by == "system:expiry"
    tool_msgs = [m for m in state.messages if isinstance(m, ToolMessage)]
    assert len(tool_msgs) == 1
    assert tool_msgs[0].status == "error" and tool_msgs[0].decision == "expire"
    assert tool_msgs[0].content.startswith(EXPIRED_PREFIX)
    # the model was called again and saw the expiry result
    seen = env.model.calls[-1]
    assert any(isinstance(m, ToolMessage) and m.content.startswith(EXPIRED_PREFIX)
               for m in seen)
    assert state.messages[-1].content.startswith("saw: " + EXPIRED_PREFIX)

    [row] = _expired_rows(agent, "t1")
    assert row.actor == "system:expiry"
    assert row.tool_call_id == entry.tool_call_id
    assert row.data["interrupt_id"] == interrupt_id
    assert row.data["on_expire"] == "reject"

    # sweeping again changes nothing: rejected exactly once
    env.clock.advance(timedelta(hours=1))
    assert agent.expire_due() == []
    assert len(_expired_rows(agent, "t1")) == 1
    assert agent.get_thread("t1").version == state.version
    assert agent.verify_audit("t1") == []

    # a decision that arrives after the expiry is refused and runs nothing
    with pytest.raises(StaleInterrupt) as info:
        agent.resume("t1", [{"type": "approve"}], interrupt_id=interrupt_id)
    assert info.value.interrupt_id == interrupt_id
    with pytest.raises(NoPendingInterrupt):
        agent.resume("t1", [{"type": "approve"}])
    assert env.ran == []
    assert not [r for r in agent.audit("t1") if r.kind == "decision"]


def test_decision_before_the_deadline_wins(env: Env) -> None:
    agent = env.agent
    first = agent.invoke("orders", thread_id="t1")
    env.clock.advance(DEADLINE - timedelta(seconds=1))
    result = agent.resume("t1", [{"type": "approve"}], interrupt_id=first.interrupts[0].id,
                          reviewer="dba")
    assert result.output == "saw: purged orders"
    env.clock.advance(timedelta(hours=1))
    assert agent.expire_due() == []
    assert env.ran == [("purge", {"table": "orders"})]
    assert _expired_rows(agent, "t1") == []


def test_late_decision_on_touch_gets_stale_interrupt_and_the_run_continues(env: Env) -> None:
    """No sweeper ran: the late resume itself applies the deadline first."""
    agent = env.agent
    first = agent.invoke("orders", thread_id="t1")
    env.clock.advance(DEADLINE + timedelta(seconds=1))
    with pytest.raises(StaleInterrupt):
        agent.resume("t1", [{"type": "approve"}], interrupt_id=first.interrupts[0].id,
                     reviewer="late-reviewer")
    assert env.ran == []
    state = agent.get_thread("t1")
    # the expiry was applied and the run continued: the transcript is complete and valid
    assert state.status == "completed"
    assert state.interrupts == []
    assert isinstance(state.messages[-1], AssistantMessage)
    assert state.messages[-1].content.startswith("saw: " + EXPIRED_PREFIX)
    assert len(_expired_rows(agent, "t1")) == 1
    assert not [r for r in agent.audit("t1") if r.kind == "decision"]


def test_late_decision_without_interrupt_id_is_not_applied_to_a_later_request(
        env: Env) -> None:
    agent = env.agent
    agent.invoke("orders", thread_id="t1")
    env.clock.advance(DEADLINE + timedelta(seconds=1))
    with pytest.raises((StaleInterrupt, NoPendingInterrupt)):
        agent.resume("t1", [{"type": "approve"}])
    assert env.ran == []
    assert len(_expired_rows(agent, "t1")) == 1


def test_new_message_after_the_deadline_expires_first_and_keeps_the_transcript_valid(
        env: Env) -> None:
    agent = env.agent
    agent.invoke("orders", thread_id="t1")
    env.clock.advance(DEADLINE + timedelta(seconds=1))
    result = agent.invoke("customers", thread_id="t1")  # touches the thread
    assert env.ran == []
    assert result.interrupted  # the new request pauses on purge(customers)
    messages = agent.get_thread("t1").messages
    kinds = [type(m).__name__ for m in messages]
    # user, assistant(purge orders), tool(expired), assistant(final), user, assistant(purge)
    assert kinds == ["UserMessage", "AssistantMessage", "ToolMessage", "AssistantMessage",
                     "UserMessage", "AssistantMessage"]
    assert messages[2].content.startswith(EXPIRED_PREFIX)  # type: ignore[union-attr]
    assert len(_expired_rows(agent, "t1")) == 1


def test_invoke_before_the_deadline_is_still_refused(env: Env) -> None:
    env.agent.invoke("orders", thread_id="t1")
    env.clock.advance(DEADLINE - timedelta(minutes=1))
    with pytest.raises(ThreadInterrupted):
        env.agent.invoke("customers", thread_id="t1")


def test_recover_applies_the_deadline_and_continues(env: Env) -> None:
    agent = env.agent
    agent.invoke("orders", thread_id="t1")
    env.clock.advance(DEADLINE + timedelta(seconds=1))
    result = agent.recover("t1")
    assert result.status == "completed"
    assert result.output is not None and result.output.startswith("saw: " + EXPIRED_PREFIX)
    assert agent.get_thread("t1").status == "completed"
    assert len(_expired_rows(agent, "t1")) == 1


def test_partial_expiry_leaves_the_other_call_pending(env: Env) -> None:
    """purge has a deadline, archive does not: only purge expires; archive still waits."""
    agent = env.agent
    first = agent.invoke("both", thread_id="t1")
    purge_id, archive_id = (a.tool_call_id for a in first.interrupts[0].value.action_requests)
    env.clock.advance(DEADLINE + timedelta(seconds=1))
    [result] = agent.expire_due()
    assert result.interrupted
    [pending] = result.interrupts[0].value.action_requests
    assert pending.tool_call_id == archive_id
    # deciding the expired call now is refused; the other one can still be decided
    with pytest.raises(Exception, match="already decided"):
        agent.resume("t1", {purge_id: {"type": "approve"}})
    final = agent.resume("t1", {archive_id: {"type": "approve"}}, reviewer="ops")
    assert final.status == "completed"
    assert env.ran == [("archive", {"table": "a"})]
    tool_results = {m.tool_call_id: m for m in final.messages if isinstance(m, ToolMessage)}
    assert tool_results[purge_id].content.startswith(EXPIRED_PREFIX)
    assert tool_results[archive_id].content == "archived a"
    assert len(_expired_rows(agent, "t1")) == 1


def test_aexpire_due_async_form(env: Env) -> None:
    async def main() -> list[str]:
        await env.agent.ainvoke("orders", thread_id="t1")
        await env.agent.ainvoke("items", thread_id="t2")
        env.clock.advance(DEADLINE * 2)
        return sorted(r.thread_id for r in await env.agent.aexpire_due())

    assert asyncio.run(main()) == ["t1", "t2"]
    assert env.ran == []


# ---------------------------------------------------------------------------- over HTTP


async def _wait_status(client: Any, thread_id: str, status: str) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    give_up = loop.time() + 20
    while True:
        body: dict[str, Any] = (await client.get(f"/api/threads/{thread_id}")).json()
        if body["status"] == status:
            return body
        assert loop.time() < give_up, f"thread {thread_id} stayed {body['status']}"
        await asyncio.sleep(0.02)


async def _watcher_settled(app: Any) -> None:
    """Let the inbox watcher take its last wake-up before the app shuts down: on Python 3.11,
    ``asyncio.wait_for`` drops a cancellation that arrives just as the awaited event fires,
    which would keep the watcher (and the shutdown) going."""
    wake = app.state.interlock.watcher._wake
    for _ in range(1000):  # at most ~10 s
        if not wake.is_set():
            return
        await asyncio.sleep(0.01)


def _api(env: Env, sweep: timedelta | None) -> Any:
    import httpx

    from interlock import server

    @asynccontextmanager
    async def client() -> AsyncIterator[Any]:
        app = server.create_app(env.agent, use_env_tokens=False, poll_interval=0.05,
                                expiry_interval=sweep)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport,
                                         base_url="http://127.0.0.1") as c:
                yield c
            await _watcher_settled(app)

    return client


def test_api_late_decision_is_409_after_the_sweeper_expired_the_call(env: Env) -> None:
    client = _api(env, sweep=timedelta(milliseconds=20))

    async def main() -> None:
        async with client() as c:
            r = await c.post("/api/threads", params={"wait": "true"},
                             json={"thread_id": "t1", "message": "orders"})
            assert r.status_code == 200, r.text
            interrupt_id = r.json()["interrupts"][0]["id"]
            env.clock.advance(DEADLINE + timedelta(seconds=1))
            # nobody touches the thread: the server's sweeper applies the deadline
            body = await _wait_status(c, "t1", "completed")
            assert body["messages"][-1]["content"].startswith("saw: " + EXPIRED_PREFIX)
            r = await c.post("/api/threads/t1/decisions",
                             json={"interrupt_id": interrupt_id,
                                   "decisions": [{"type": "approve"}]})
            assert r.status_code == 409, r.text

    asyncio.run(main())
    assert env.ran == []
    [row] = _expired_rows(env.agent, "t1")
    assert row.actor == "system:expiry"


def test_api_late_decision_is_409_when_it_touches_the_thread_first(env: Env) -> None:
    client = _api(env, sweep=None)  # no sweeper: only the late request itself sees the deadline

    async def main() -> None:
        async with client() as c:
            r = await c.post("/api/threads", params={"wait": "true"},
                             json={"thread_id": "t1", "message": "orders"})
            interrupt_id = r.json()["interrupts"][0]["id"]
            env.clock.advance(DEADLINE + timedelta(seconds=1))
            r = await c.post("/api/threads/t1/decisions",
                             json={"interrupt_id": interrupt_id,
                                   "decisions": [{"type": "approve"}]})
            assert r.status_code == 409, r.text
            body = await _wait_status(c, "t1", "completed")
            assert not [h for h in body["history"] if h["kind"] == "decision"]

    asyncio.run(main())
    assert env.ran == []
    assert len(_expired_rows(env.agent, "t1")) == 1


def test_one_sweep_applies_every_deadline_of_per_call_requests(tmp_path: Path) -> None:
    """Invariant 2, with ``interrupt_mode="per_call"`` (one request per call): one sweep
    escalates every call past ``escalate_after`` and, later, expires every call past its
    deadline, in one commit each; the run then continues at once."""
    clock = Clock()
    ran: list[int] = []

    @tool
    def pay(amount: int) -> str:
        """Pay."""
        ran.append(amount)
        return "paid"

    agent = Agent(
        model=ScriptedModel([[{"name": "pay", "args": {"amount": 1}},
                              {"name": "pay", "args": {"amount": 2}},
                              {"name": "pay", "args": {"amount": 3}}], "done"]),
        tools=[pay], clock=clock,
        middleware=[HumanInTheLoop(interrupt_on={"pay": InterruptOn(
            allowed_decisions=["approve", "reject"], reviewers=["finance"],
            escalate_to=["oncall"], escalate_after=timedelta(minutes=30),
            expires_after=timedelta(minutes=60))}, interrupt_mode="per_call")],
        checkpointer=SqliteCheckpointer(tmp_path / "interlock.db"))
    try:
        assert len(agent.invoke("go", thread_id="t").interrupts) == 3
        clock.advance(timedelta(minutes=31))
        agent.expire_due()
        requests = agent.get_thread("t").interrupts
        assert [r.value.review_configs[0].escalated_at is not None for r in requests] == \
            [True] * 3
        escalated = [r for r in agent.audit("t") if r.kind == "escalated"]
        assert len(escalated) == 3 and len({r.data["interrupt_id"] for r in escalated}) == 3
        clock.advance(timedelta(minutes=30))
        [result] = agent.expire_due()
        assert result.status == "completed" and result.interrupts == []
        assert len(_expired_rows(agent, "t")) == 3 and ran == []
    finally:
        agent.close()


def test_a_decision_for_a_call_that_expired_says_so_and_changes_nothing(env: Env) -> None:
    """The sweep expired the call and the run went on: a reviewer's late approval names the
    call, is told it expired (409 ``CallSettled``, an ``InterruptConflict``) and stores
    nothing."""
    agent = env.agent
    first = agent.invoke("orders", thread_id="t1")
    call_id = first.interrupts[0].value.action_requests[0].tool_call_id
    env.clock.advance(DEADLINE + timedelta(seconds=1))
    assert agent.expire_due()[0].status == "completed"
    version = agent.get_thread("t1").version
    for late in ({call_id: {"type": "approve"}}, [{"type": "approve", "tool_call_id": call_id}]):
        with pytest.raises(CallSettled, match="it expired: no reviewer decided before its "
                                              "deadline") as caught:
            agent.resume("t1", late, reviewer="ops")
        assert isinstance(caught.value, InterruptConflict)
        assert caught.value.tool_call_id == call_id and caught.value.state == "expired"
    assert agent.get_thread("t1").version == version and env.ran == []


def test_a_decision_without_a_call_id_never_moves_to_the_call_after_one_that_expired(
        tmp_path: Path) -> None:
    """Invariant 1: ``purge`` (with a deadline) and ``archive`` (without) wait, one request
    each. After ``purge``'s deadline a reviewer sends a bare approval: the resume itself
    applies the deadline, and the approval would now go to ``archive``, which was not the
    call first shown. Refused (``CallSettled`` naming the expired call); nothing runs, and
    ``archive`` still waits; named by its id, it can be decided."""
    clock = Clock()
    ran: list[str] = []

    @tool
    def purge(table: str) -> str:
        """Delete every row of a table."""
        ran.append(f"purge {table}")
        return "purged"

    @tool
    def archive(table: str) -> str:
        """Archive a table."""
        ran.append(f"archive {table}")
        return "archived"

    def reply(messages: Any) -> Any:
        if isinstance(messages[-1], UserMessage):
            return [{"name": "purge", "args": {"table": "a"}, "id": "p"},
                    {"name": "archive", "args": {"table": "a"}, "id": "r"}]
        return "done"

    agent = Agent(
        model=ScriptedModel(reply), tools=[purge, archive], clock=clock,
        middleware=[HumanInTheLoop(interrupt_on={
            "purge": InterruptOn(allowed_decisions=["approve", "reject"], expires_after=DEADLINE),
            "archive": True}, interrupt_mode="per_call")],
        checkpointer=SqliteCheckpointer(tmp_path / "interlock.db"))
    try:
        for n, bare in enumerate(({"type": "approve"}, [{"type": "approve"}],
                                  {"decisions": [{"type": "approve"}]})):
            tid = f"t{n}"
            assert len(agent.invoke("both", thread_id=tid).interrupts) == 2
            clock.advance(DEADLINE + timedelta(seconds=1))
            with pytest.raises(CallSettled, match=r"'p' \(purge\).*it expired"):
                agent.resume(tid, bare)
            assert ran == []
            [left] = agent.get_thread(tid).interrupts
            assert left.value.action_requests[0].tool_call_id == "r"
        assert agent.resume("t0", {"r": {"type": "approve"}}).status == "completed"
        assert ran == ["archive a"]
    finally:
        agent.close()
