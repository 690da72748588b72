"""Thread access holds on every surface of the server, not only /api: the LangGraph-compatible
API, the notification outbox and the list's count give a foreign token nothing."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from interlock import MemoryCheckpointer
from server.conftest import ADMIN, ALICE, BOB, CAROL, TOKENS, bearer, running
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


async def test_langgraph_api_reads_follow_thread_access() -> None:
    EXECUTED.clear()
    agent = make_agent(MemoryCheckpointer())
    async with running(agent, tokens=TOKENS, langgraph_api=True) as s:
        c = s.client
        tid = await _bobs_drop(c)
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

