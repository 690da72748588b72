"""Thread access holds on every surface of the server, not only /api: the LangGraph-compatible
API, the notification outbox and the list's count give a foreign token nothing."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from interlock import MemoryCheckpointer
from server.conftest import ADMIN, ALICE, BOB, CAROL, TOKENS, Server, bearer, running
from server.server_agents import EXECUTED, make_agent

pytestmark = pytest.mark.anyio


async def _bobs_drop(c: httpx.AsyncClient) -> str:
    """Bob starts a run that waits for a DBA (alice) to approve dropping a table."""
    r = await c.post("/langgraph/threads", json={}, headers={"x-api-key": BOB})
    tid = str(r.json()["thread_id"])
    r = await c.post(f"/langgraph/threads/{tid}/runs/wait", headers={"x-api-key": BOB}, json={
        "assistant_id": "agent",
        "input": {"messages": [{"role": "user", "content": "drop audit_old"}]}})
    assert r.status_code == 200, r.text
    assert r.json()["__interrupt__"], r.json()
    return tid


@contextlib.asynccontextmanager
async def _serving_bobs_drop() -> AsyncIterator[tuple[Server, str]]:
    """The server with the LangGraph API, and the thread of :func:`_bobs_drop`."""
    EXECUTED.clear()
    agent = make_agent(MemoryCheckpointer())
    async with running(agent, tokens=TOKENS, langgraph_api=True) as s:
        yield s, await _bobs_drop(s.client)


async def test_langgraph_api_reads_follow_thread_access() -> None:
    async with _serving_bobs_drop() as (s, tid):
        c = s.client
        carol = {"x-api-key": CAROL}
        for method, path, body in [
            ("GET", f"/langgraph/threads/{tid}", None),
            ("GET", f"/langgraph/threads/{tid}/state", None),
            ("POST", f"/langgraph/threads/{tid}/history", {}),
            ("GET", f"/langgraph/threads/{tid}/runs", None),
            ("GET", f"/langgraph/agent-inbox/threads/{tid}/state", None),
        ]:
            r = await c.request(method, path, headers=carol, json=body)
            assert r.status_code == 403, (path, r.status_code, r.text)
            assert r.json()["error"] == "NotAuthorized"
            assert "drop" not in r.text.lower() or "may not read" in r.text
        for body in ({}, {"status": "interrupted"}, {"ids": [tid]}):
            r = await c.post("/langgraph/threads/search", headers=carol, json=body)
            assert r.status_code == 200 and r.json() == [], (body, r.text)
        # resuming through the LangGraph API is refused too, and nothing runs
        state = (await c.get(f"/langgraph/threads/{tid}/state",
                             headers={"x-api-key": BOB})).json()
        intr = state["tasks"][0]["interrupts"][0]["id"] if state.get("tasks") else None
        r = await c.post(f"/langgraph/threads/{tid}/runs/wait", headers=carol, json={
            "assistant_id": "agent",
            "command": {"resume": {intr: {"decisions": [{"type": "approve"}]}}
                        if intr else {"decisions": [{"type": "approve"}]}}})
        assert r.status_code in (403, 422), r.text
        assert EXECUTED == []
        # the thread's creator, the DBA who may decide it and an admin can read it
        for token in (BOB, ALICE, ADMIN):
            r = await c.get(f"/langgraph/threads/{tid}/state", headers={"x-api-key": token})
            assert r.status_code == 200, (token, r.text)
            found = await c.post("/langgraph/threads/search", headers={"x-api-key": token},
                                 json={"status": "interrupted"})
            assert [t["thread_id"] for t in found.json()] == [tid]


async def test_outbox_and_counts_are_for_admins() -> None:
    agent = make_agent(MemoryCheckpointer())
    async with running(agent, tokens=TOKENS, langgraph_api=True) as s:
        c = s.client
        await _bobs_drop(c)
        for token in (BOB, CAROL, ALICE):
            r = await c.get("/api/outbox", headers=bearer(token))
            assert r.status_code == 403 and r.json()["error"] == "NotAuthorized", r.text
            r = await c.post("/api/outbox/nope/retry", headers=bearer(token))
            assert r.status_code == 403, r.text
            listed: Any = (await c.get("/api/threads", params={"count": "true"},
                                       headers=bearer(token))).json()
            assert listed["total"] is None
        assert (await c.get("/api/outbox", headers=bearer(ADMIN))).status_code == 200
        listed = (await c.get("/api/threads", params={"count": "true"},
                              headers=bearer(ADMIN))).json()
        assert listed["total"] == 1
        # carol sees neither the thread nor a count that would reveal it
        carol = (await c.get("/api/threads", params={"count": "true"},
                             headers=bearer(CAROL))).json()
        assert carol["threads"] == [] and carol["total"] is None
        # nor does the audit head (the log's thread and row counts), nor checking a head
        head = await c.get("/api/audit/head", headers=bearer(ADMIN))
        assert head.status_code == 200 and head.json()["threads"] == 1
        for token in (BOB, CAROL, ALICE):
            r = await c.get("/api/audit/head", headers=bearer(token))
            assert r.status_code == 403 and r.json()["error"] == "NotAuthorized", r.text
            assert '"rows"' not in r.text
            forged = {**head.json(), "rows": 0}
            r = await c.post("/api/audit/verify", json={"head": forged}, headers=bearer(token))
            assert r.status_code == 403 and "row(s)" not in r.text, r.text


async def test_a_thread_created_through_langgraph_belongs_to_its_creator() -> None:
    """``POST /langgraph/threads`` makes a thread that exists only here until its first run:
    it is listed and shown to its creator (and admins) alone, and another token can neither
    read it nor take it by starting the first run on it."""
    EXECUTED.clear()
    agent = make_agent(MemoryCheckpointer())
    async with running(agent, tokens=TOKENS, langgraph_api=True) as s:
        c = s.client
        bob, carol = {"x-api-key": BOB}, {"x-api-key": CAROL}
        made = await c.post("/langgraph/threads", json={"thread_id": "bobs-plan"}, headers=bob)
        assert made.status_code == 200, made.text
        tid = made.json()["thread_id"]
        for token in (BOB, ADMIN):
            found = await c.post("/langgraph/threads/search", json={},
                                 headers={"x-api-key": token})
            assert [t["thread_id"] for t in found.json()] == [tid], token
        assert (await c.post("/langgraph/threads/search", json={}, headers=carol)).json() == []
        for path in (f"/langgraph/threads/{tid}", f"/langgraph/threads/{tid}/state"):
            r = await c.get(path, headers=carol)
            assert r.status_code in (403, 404), (path, r.text)
        r = await c.post(f"/langgraph/threads/{tid}/history", json={}, headers=carol)
        assert r.status_code in (403, 404), r.text
        # carol cannot take the id: not by creating it, nor by running on it first
        again = await c.post("/langgraph/threads", json={"thread_id": tid,
                                                         "if_exists": "do_nothing"},
                             headers=carol)
        assert again.status_code in (403, 409), again.text
        for body in ({"if_not_exists": "create"}, {}):
            r = await c.post(f"/langgraph/threads/{tid}/runs/wait", headers=carol, json={
                "assistant_id": "agent", **body,
                "input": {"messages": [{"role": "user", "content": "hello"}]}})
            assert r.status_code == 403, r.text
        assert await s.agent.alist_threads() == []
        # bob's own first run works, and the thread is his
        r = await c.post(f"/langgraph/threads/{tid}/runs/wait", headers=bob, json={
            "assistant_id": "agent",
            "input": {"messages": [{"role": "user", "content": "hello"}]}})
        assert r.status_code == 200, r.text
        assert (await s.agent.aget_thread(tid)).created_by == "bob"



@pytest.mark.parametrize("how", ["api", "update_state", "goto", "ignore"])
async def test_a_reviewer_who_cancels_a_thread_is_told_so_and_may_read_it(how: str) -> None:
    """alice (a DBA) may decide bob's drop, so she may cancel it, on /api or through the
    LangGraph API's ways of closing a request. The answer is the outcome (200), not a 403 from
    reading the thread back after her cancel left no call she may decide: who closed the
    calls decided them, and may read the thread as any decider may. Nothing runs."""
    async with _serving_bobs_drop() as (s, tid):
        c, agent = s.client, s.agent
        alice = {"x-api-key": ALICE}
        runs = f"/langgraph/threads/{tid}/runs/wait"
        if how == "api":
            r = await c.post(f"/api/threads/{tid}/cancel", headers=bearer(ALICE), json={})
        elif how == "update_state":
            r = await c.post(f"/langgraph/threads/{tid}/state", headers=alice,
                             json={"values": None, "as_node": "__end__"})
        elif how == "goto":
            r = await c.post(runs, headers=alice, json={
                "assistant_id": "agent", "command": {"goto": "__end__"}})
        else:
            r = await c.post(runs, headers=alice, json={
                "assistant_id": "agent", "command": {"resume": [{"type": "ignore"}]}})
        assert r.status_code == 200, r.text
        state = await c.get(f"/api/threads/{tid}", headers=bearer(ALICE))
        assert state.status_code == 200 and state.json()["status"] == "idle", state.text
        r = await c.get(f"/langgraph/threads/{tid}/state", headers=alice)
        assert r.status_code == 200 and not r.json().get("interrupts"), r.text
        (row,) = [a for a in await agent.aaudit(tid) if a.kind == "cancelled"]
        assert row.actor == "alice"
        # carol, who neither may decide it nor decided it, still reads nothing
        r = await c.get(f"/langgraph/threads/{tid}/state", headers={"x-api-key": CAROL})
        assert r.status_code == 403
    assert EXECUTED == []
