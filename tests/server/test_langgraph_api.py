"""The LangGraph-compatible API in process: authentication headers, the Agent Inbox origin,
and resumes that are refused before anything changes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from interlock import Agent, HumanInTheLoop, MemoryCheckpointer, ScriptedModel

from .conftest import ALICE, TOKENS, bearer, running
from .server_agents import EXECUTED, TOOLS, make_agent, script

pytestmark = pytest.mark.anyio

INBOX_ORIGIN = "http://localhost:3000"


async def _paused(c: httpx.AsyncClient, headers: dict[str, str], text: str) -> tuple[str, Any]:
    r = await c.post("/langgraph/threads", json={}, headers=headers)
    tid = r.json()["thread_id"]
    r = await c.post(f"/langgraph/threads/{tid}/runs/wait", headers=headers, json={
        "assistant_id": "agent", "input": {"messages": [{"role": "user", "content": text}]}})
    assert r.status_code == 200, r.text
    return tid, r.json()["__interrupt__"]


async def test_tokens_in_either_header_and_the_inbox_origin() -> None:
    agent = make_agent(MemoryCheckpointer())
    async with running(agent, tokens=TOKENS, langgraph_api=True,
                       langgraph_origins=[INBOX_ORIGIN]) as s:
        c = s.client
        assert (await c.post("/langgraph/threads/search", json={},
                             headers={"x-api-key": ALICE})).status_code == 200
        assert (await c.post("/langgraph/threads/search", json={},
                             headers=bearer(ALICE))).status_code == 200
        r = await c.post("/langgraph/threads", json={"thread_id": "a/b"},
                         headers={"x-api-key": ALICE})
        assert r.status_code == 422 and r.json()["error"] == "InvalidText"
        r = await c.post("/langgraph/threads/search", json={})
        assert r.status_code == 401 and "x-api-key" in r.json()["message"]
        assert r.headers["www-authenticate"].startswith("Bearer")

        # the browser's preflight and the request itself from Agent Inbox's origin
        r = await c.options("/langgraph/agent-inbox/threads/search", headers={
            "Origin": INBOX_ORIGIN, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "x-api-key,content-type"})
        assert r.status_code == 200
        assert r.headers["access-control-allow-origin"] == INBOX_ORIGIN
        r = await c.post("/langgraph/agent-inbox/threads/search", json={},
                         headers={"Origin": INBOX_ORIGIN, "x-api-key": ALICE})
        assert r.status_code == 200
        assert r.headers["access-control-allow-origin"] == INBOX_ORIGIN
        # ... but that origin may not use the rest of the server, and others may not use it
        r = await c.post("/api/threads", json={"message": "hi"},
                         headers={"Origin": INBOX_ORIGIN, **bearer(ALICE)})
        assert r.status_code == 403 and r.json()["error"] == "CrossOriginRequest"
        r = await c.post("/langgraph/threads/search", json={},
                         headers={"Origin": "http://evil.example", "x-api-key": ALICE})
        assert r.status_code == 403 and r.json()["error"] == "CrossOriginRequest"


async def test_off_unless_enabled() -> None:
    async with running(make_agent(MemoryCheckpointer())) as s:
        assert (await s.client.post("/langgraph/threads/search", json={})).status_code == 404


async def test_refused_resumes_change_nothing() -> None:
    EXECUTED.clear()
    agent = make_agent(MemoryCheckpointer())
    async with running(agent, langgraph_api=True) as s:  # local mode: no token needed
        c, h = s.client, {}
        tid, pending = await _paused(c, h, "multi")
        assert len(pending) == 2
        url = f"/langgraph/threads/{tid}/runs"
        ids = [p["id"] for p in pending]

        async def refused(body: dict[str, Any], status: int, error: str, *words: str) -> None:
            r = await c.post(url, json={"assistant_id": "agent", **body}, headers=h)
            assert r.status_code == status, r.text
            assert r.json()["error"] == error, r.text
            for w in words:
                assert w in r.json()["message"], r.text

        await refused({"command": {"resume": {"0" * 32: {"type": "approve"}}}}, 409,
                      "StaleInterrupt")
        await refused({"command": {"resume": [{"type": "accept", "args": None}] * 3}}, 422,
                      "InvalidDecision", "3 responses for 2 pending")
        await refused({"command": {"resume": {ids[0]: {"type": "accept", "args": None},
                                              ids[1]: {"type": "ignore", "args": None}}}},
                      422, "InvalidDecision", "ignore")
        await refused({"command": {"resume": {ids[0]: {"type": "response", "args": ""}}}},
                      422, "InvalidDecision", "without text")
        await refused({"command": {"resume": {ids[0]: {"type": "edit", "args": "x"}}}},
                      422, "InvalidDecision", "'edit' needs")
        await refused({"command": {"resume": {"decisions": [{"type": "approve"}]}}}, 422,
                      "InvalidDecision", "got 1 decision(s) for 2 pending")
        await refused({"command": {"goto": "tools"}}, 422, "UnsupportedCommand")
        await refused({"input": {"messages": [{"role": "user", "content": "again"}]}}, 409,
                      "ThreadInterrupted")
        await refused({"input": {"foo": 1}}, 422, "UnsupportedInput")
        await refused({"command": {"resume": {ids[0]: {"type": "response",
                                                       "args": "x" * 64_001}}}},
                      422, "LimitExceeded", "max_message_chars")
        r = await c.post(url + "/stream", headers=h, json={
            "assistant_id": "agent", "stream_mode": "messages",
            "command": {"resume": {"decisions": [{"type": "approve"}] * 2}}})
        assert r.status_code == 422 and r.json()["error"] == "UnsupportedStreamMode"
        r = await c.get(f"/langgraph/threads/{tid}/state", headers=h)
        assert [p["id"] for p in r.json()["interrupts"]] == ids
        assert EXECUTED == []
        assert [a.kind for a in await agent.aaudit(tid)].count("decision") == 0

        # LangChain's batched resume, one decision per pending call, is passed to the core
        r = await c.post(url + "/wait", headers=h, json={
            "assistant_id": "agent",
            "command": {"resume": {"decisions": [{"type": "approve"}, {"type": "reject"}]}}})
        assert r.status_code == 200 and "__interrupt__" not in r.json()
        assert [name for name, _ in EXECUTED] == ["execute_sql"]


async def test_per_call_requests_answered_in_one_resume() -> None:
    """With one review request per call (``interrupt_mode="per_call"``), the calls of several
    requests are answered together, keyed by their interrupt ids."""
    EXECUTED.clear()
    agent = Agent(model=ScriptedModel(script), tools=TOOLS, checkpointer=MemoryCheckpointer(),
                  middleware=[HumanInTheLoop(interrupt_on={"execute_sql": True,
                                                           "write_file": True},
                                             interrupt_mode="per_call")])
    async with running(agent, langgraph_api=True) as s:
        tid, pending = await _paused(s.client, {}, "multi")
        assert len({i.id for i in (await agent.aget_thread(tid)).interrupts}) == 2
        r = await s.client.post(f"/langgraph/threads/{tid}/runs/wait", json={
            "assistant_id": "agent", "command": {"resume": {
                pending[0]["id"]: {"type": "approve"},
                pending[1]["id"]: {"type": "reject", "message": "no"}}}})
        assert r.status_code == 200, r.text
        assert "__interrupt__" not in r.json()
        assert EXECUTED == [("execute_sql", {"query": "SELECT 1"})]
