"""The HTTP API in-process (httpx ASGI transport), on every storage backend: each endpoint,
each status code, the SSE streams, and that decisions made over HTTP run exactly once."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import httpx
import pytest

from interlock import (
    Agent,
    InterruptConflict,
    InvalidDecision,
    MemoryCheckpointer,
    NoPendingInterrupt,
    StaleInterrupt,
    ThreadInterrupted,
)
from interlock.errors import IN_MEMORY_NOTE
from interlock.server.errors import http_terms
from interlock.storage.base import ROW_ONLY, ThreadSnapshot

from .conftest import Server, eventually, running, sse
from .server_agents import EXECUTED, GATE

pytestmark = pytest.mark.anyio

SQL = "DELETE FROM records WHERE created_at < NOW() - INTERVAL '30 days'"


async def start(s: Server, message: str, thread_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"message": message}
    if thread_id:
        body["thread_id"] = thread_id
    r = await s.client.post("/api/threads", params={"wait": "true"}, json=body)
    assert r.status_code == 200, r.text
    return dict(r.json())


def interrupt_of(result: dict[str, Any]) -> dict[str, Any]:
    assert result["status"] == "interrupted", result
    return dict(result["interrupts"][0])


async def decide(s: Server, thread_id: str, decisions: Any, *, interrupt_id: str | None = None,
                 wait: bool = True, **extra: Any) -> httpx.Response:
    body = {"decisions": decisions, **extra}
    if interrupt_id:
        body["interrupt_id"] = interrupt_id
    return await s.client.post(f"/api/threads/{thread_id}/decisions",
                               params={"wait": "true"} if wait else None, json=body)


def tool_results(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in result["messages"] if m["role"] == "tool"]


def assert_error(r: httpx.Response, status: int, error: str, message: str | None = None) -> None:
    assert r.status_code == status, r.text
    body = r.json()
    assert body["error"] == error, body
    if message is not None:
        assert body["message"] == message


# -- server basics ----------------------------------------------------------------------------


async def test_health_openapi_and_index(local: Server) -> None:
    r = await local.client.get("/api/health")
    assert r.status_code == 200 and r.json()["ok"] is True
    spec = (await local.client.get("/api/openapi.json")).json()
    paths = spec["paths"]
    for path, method in [
        ("/api/threads", "get"), ("/api/threads", "post"), ("/api/threads/{thread_id}", "get"),
        ("/api/threads/{thread_id}/messages", "post"),
        ("/api/threads/{thread_id}/decisions", "post"),
        ("/api/threads/{thread_id}/answer", "post"), ("/api/threads/{thread_id}/cancel", "post"),
        ("/api/threads/{thread_id}/remembered", "get"),
        ("/api/threads/{thread_id}/remembered/{tool_name}", "delete"),
        ("/api/threads/{thread_id}/audit", "get"), ("/api/threads/{thread_id}/events", "get"),
        ("/api/audit", "get"), ("/api/audit/verify", "get"), ("/api/inbox/events", "get"),
        ("/api/me", "get"),
    ]:
        assert method in paths[path], (path, method)
    decisions = paths["/api/threads/{thread_id}/decisions"]["post"]
    assert {"202", "200", "403", "404", "409", "422"} <= set(decisions["responses"])
    assert "HTTPBearer" in spec["components"]["securitySchemes"]
    page = await local.client.get("/")
    assert page.status_code == 200
    assert re.search(r'<script type="module" src="static/[0-9a-f]{16}/inbox\.js"></script>',
                     page.text)
    assert "<script>" not in page.text  # no inline script anywhere
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    js = await local.client.get("/static/inbox.js")
    assert js.status_code == 200 and "innerHTML" not in js.text


async def test_inbox_files_are_cached_under_a_version_and_the_page_is_revalidated(
        local: Server) -> None:
    page = await local.client.get("/")
    assert page.headers["cache-control"] == "no-cache"
    again = await local.client.get("/", headers={"If-None-Match": page.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    names = re.findall(r'"static/([0-9a-f]{16})/([a-z]+\.(?:js|css))"', page.text)
    assert {n for _, n in names} >= {"inbox.js", "api.js", "display.js", "inbox.css"}
    version = names[0][0]
    for _, name in names:
        r = await local.client.get(f"/static/{version}/{name}")
        plain = await local.client.get(f"/static/{name}")
        assert r.status_code == plain.status_code == 200 and r.content == plain.content
        assert r.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert plain.headers["cache-control"] == "no-cache"
        assert "no-store" not in r.headers["cache-control"]
        assert r.headers["content-security-policy"] and r.headers["x-content-type-options"]
        # unversioned files are revalidated: an unchanged one costs a 304
        cached = await local.client.get(f"/static/{name}",
                                        headers={"If-None-Match": plain.headers["etag"]})
        assert cached.status_code == 304
    # the version is a digest of the files: another one is not served
    other = "0" * 16 if version != "0" * 16 else "1" * 16
    assert (await local.client.get(f"/static/{other}/inbox.js")).status_code == 404
    assert (await local.client.get(f"/static/{version}/missing.js")).status_code == 404
    assert (await local.client.get("/api/me")).headers["cache-control"] == "no-store"


async def test_security_headers_on_api(local: Server) -> None:
    r = await local.client.get("/api/threads")
    assert r.headers["cache-control"] == "no-store"
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]


# -- threads -----------------------------------------------------------------------------------


async def test_start_run_returns_202_and_events_follow(local: Server) -> None:
    async with sse(local.app, "/api/inbox/events") as inbox:
        r = await local.client.post("/api/threads", json={"message": f"sql {SQL}",
                                                          "thread_id": "t1"})
        assert r.status_code == 202, r.text
        body = r.json()
        assert body["thread_id"] == "t1" and body["accepted"] is True
        assert r.headers["location"] == "/api/threads/t1" == body["thread_url"]
        assert body["events_url"].startswith("/api/threads/t1/events?after=")
        async with sse(local.app, body["events_url"]) as events:
            done = await events.until(lambda e: e["event"] == "run_completed")
            kinds = [e["event"] for e in events.seen]
            assert kinds.index("tool_call_proposed") < kinds.index("interrupt_raised")
            assert done["data"]["result"]["status"] == "interrupted"
            raised = next(e for e in events.seen if e["event"] == "interrupt_raised")
            action = raised["data"]["interrupt"]["value"]["action_requests"][0]
            assert action["args"] == {"query": SQL}
        ev = await inbox.until(lambda e: e["event"] == "request_raised")
        assert ev["data"]["thread"]["thread_id"] == "t1"
        assert ev["data"]["thread"]["pending"][0]["calls"][0]["name"] == "execute_sql"
        assert ev["data"]["interrupt_id"] == raised["data"]["interrupt"]["id"]


async def test_start_run_without_id_and_plain_answer(local: Server) -> None:
    result = await start(local, "hello there")
    assert result["status"] == "completed"
    assert result["output"] == "You said: hello there"
    assert len(result["thread_id"]) == 32


async def test_list_is_the_inbox_newest_first_and_paginated(local: Server) -> None:
    for i in range(5):
        await start(local, f"sql SELECT {i}", f"p{i}")
    await start(local, "hello", "done")
    r = await local.client.get("/api/threads", params={"status": "interrupted", "limit": 2})
    page1 = r.json()
    assert [t["thread_id"] for t in page1["threads"]] == ["p4", "p3"]
    assert page1["threads"][0]["pending"][0]["calls"][0]["args_preview"] == '{"query": "SELECT 4"}'
    r = await local.client.get("/api/threads", params={
        "status": "interrupted", "limit": 2, "before": page1["next_before"]})
    page2 = r.json()
    assert [t["thread_id"] for t in page2["threads"]] == ["p2", "p1"]
    r = await local.client.get("/api/threads", params={
        "status": "interrupted", "limit": 2, "before": page2["next_before"]})
    page3 = r.json()
    assert [t["thread_id"] for t in page3["threads"]] == ["p0"]
    assert page3["next_before"] is None
    exact = (await local.client.get("/api/threads", params={"status": "interrupted",
                                                           "limit": 5})).json()
    assert len(exact["threads"]) == 5 and exact["next_before"] is None  # no empty last page
    everything = (await local.client.get("/api/threads")).json()["threads"]
    assert everything[0]["thread_id"] == "done"
    assert {t["status"] for t in everything} == {"interrupted", "completed"}
    bad = await local.client.get("/api/threads", params={"limit": 0})
    assert_error(bad, 422, "RequestValidationError")
    bad = await local.client.get("/api/threads", params={"status": "nope"})
    assert_error(bad, 422, "RequestValidationError")


async def test_get_thread_with_messages_request_tools_and_history(local: Server) -> None:
    await start(local, f"sql {SQL}", "t1")
    r = await local.client.get("/api/threads/t1")
    assert r.status_code == 200
    t = r.json()
    assert t["status"] == "interrupted"
    assert [m["role"] for m in t["messages"]] == ["user", "assistant"]
    req = t["interrupts"][0]["value"]
    assert req["action_requests"][0]["name"] == "execute_sql"
    assert req["review_configs"][0]["allowed_decisions"] == ["approve", "edit", "reject",
                                                              "respond"]
    assert req["review_configs"][0]["args_schema"]["properties"]["query"]["type"] == "string"
    assert t["tools"]["execute_sql"]["description"].startswith("Run a SQL statement")
    assert t["calls"][0]["state"] == "pending_review"
    assert [h["kind"] for h in t["history"]] == ["message_posted", "run_started",
                                                 "request_raised"]


async def test_unknown_thread_is_404_everywhere(local: Server) -> None:
    # said in HTTP terms (not agent.invoke(...)); the memory store adds how to keep threads
    # across processes
    expected = ("Thread 'ghost' does not exist on this server. Check the id (GET /api/threads "
                "lists them), or start it with POST /api/threads {\"thread_id\": \"ghost\", "
                "\"message\": \"...\"}.")
    if isinstance(local.agent.checkpointer, MemoryCheckpointer):
        expected += " " + IN_MEMORY_NOTE
    c = local.client
    for r in [
        await c.get("/api/threads/ghost"),
        await c.post("/api/threads/ghost/messages", json={"message": "hi"}),
        await c.post("/api/threads/ghost/decisions", json={"decisions": [{"type": "approve"}]}),
        await c.post("/api/threads/ghost/answer", json={"value": "x"}),
        await c.post("/api/threads/ghost/cancel", json={}),
        await c.get("/api/threads/ghost/remembered"),
        await c.delete("/api/threads/ghost/remembered/execute_sql"),
        await c.get("/api/threads/ghost/audit"),
        await c.get("/api/threads/ghost/events"),
    ]:
        assert_error(r, 404, "ThreadNotFound", expected)


async def test_post_message_continues_a_thread_and_409_while_waiting(local: Server) -> None:
    await start(local, "hello", "t1")
    r = await local.client.post("/api/threads/t1/messages", params={"wait": "true"},
                                json={"message": f"sql {SQL}"})
    assert r.status_code == 200, r.text
    result = r.json()
    assert result["status"] == "interrupted"
    r = await local.client.post("/api/threads/t1/messages", json={"message": "another"})
    ids = [i["id"] for i in result["interrupts"]]
    assert_error(r, 409, "ThreadInterrupted", http_terms(ThreadInterrupted("t1", ids)))


async def test_thread_busy_is_409(local: Server) -> None:
    GATE.clear()
    try:
        r = await local.client.post("/api/threads", json={"message": "block", "thread_id": "b"})
        assert r.status_code == 202
        await eventually(lambda: _status(local, "b", "running"))
        await eventually(lambda: _journal_state(local.agent, "b", "running"))
        r = await local.client.post("/api/threads/b/messages", json={"message": "more"})
        assert_error(r, 409, "ThreadBusy")
        r = await local.client.post("/api/threads/b/cancel", json={})
        assert_error(r, 409, "ThreadBusy")
    finally:
        GATE.set()
    await eventually(lambda: _status(local, "b", "completed"))


async def _status(s: Server, thread_id: str, status: str) -> bool:
    r = await s.client.get(f"/api/threads/{thread_id}")
    return r.status_code == 200 and r.json()["status"] == status


async def _journal_state(agent: Agent, thread_id: str, state: str) -> bool:
    return any(e.state.value == state for e in await agent.ajournal(thread_id))


# -- decisions -----------------------------------------------------------------------------------


async def test_approve_waits_and_runs_once(local: Server) -> None:
    intr = interrupt_of(await start(local, f"sql {SQL}", "t1"))
    r = await decide(local, "t1", [{"type": "approve"}], interrupt_id=intr["id"])
    assert r.status_code == 200, r.text
    result = r.json()
    assert result["status"] == "completed"
    assert result["output"] == f"Done. OK: ran {SQL}"
    assert EXECUTED == [("execute_sql", {"query": SQL})]
    audit = (await local.client.get("/api/threads/t1/audit")).json()["records"]
    decision = next(a for a in audit if a["kind"] == "decision")
    assert decision["actor"] == "local" and decision["data"]["type"] == "approve"


async def test_decision_202_then_run_continues_in_background(local: Server) -> None:
    intr = interrupt_of(await start(local, f"sql {SQL}", "t1"))
    r = await decide(local, "t1", {"call_1_0": {"type": "approve"}}, interrupt_id=intr["id"],
                     wait=False)
    assert r.status_code == 202, r.text
    async with sse(local.app, r.json()["events_url"]) as events:
        done = await events.until(lambda e: e["event"] == "run_completed")
    kinds = [e["event"] for e in events.seen]
    assert "tool_started" in kinds and "tool_finished" in kinds
    finished = next(e for e in events.seen if e["event"] == "tool_finished")
    assert finished["data"]["result"]["content"] == f"OK: ran {SQL}"
    assert done["data"]["result"]["status"] == "completed"
    assert EXECUTED == [("execute_sql", {"query": SQL})]


async def test_edit_reject_and_respond(local: Server) -> None:
    interrupt_of(await start(local, f"sql {SQL}", "e"))
    r = await decide(local, "e", [{"type": "edit", "edited_action": {
        "name": "execute_sql", "args": {"query": "SELECT 1"}}}])
    res = tool_results(r.json())[0]
    assert res["decision"] == "edit" and res["content"].endswith("OK: ran SELECT 1")

    interrupt_of(await start(local, "sql DROP TABLE x", "r"))
    r = await decide(local, "r", [{"type": "reject", "message": "never on prod"}])
    res = tool_results(r.json())[0]
    assert res["status"] == "error" and "Reason: never on prod" in res["content"]

    interrupt_of(await start(local, "ask Which region?", "q"))
    r = await decide(local, "q", [{"type": "respond", "message": "eu-west-1"}])
    res = tool_results(r.json())[0]
    assert res["content"] == "eu-west-1" and res["decision"] == "respond"
    assert r.json()["output"] == "Done. eu-west-1"
    assert EXECUTED == [("execute_sql", {"query": "SELECT 1"})]


@pytest.mark.parametrize("decisions", [
    [{"type": "respond"}],
    [{"type": "bogus"}],
    [{"type": "approve"}, {"type": "approve"}],
    {"nope": {"type": "approve"}},
    [{"type": "edit", "edited_action": {"name": "execute_sql", "args": {"q": 1}}}],
])
async def test_invalid_decision_is_422_with_the_library_message(
    local: Server, decisions: Any
) -> None:
    intr = interrupt_of(await start(local, f"sql {SQL}", "t1"))
    before = await local.agent.aget_thread("t1")
    r = await decide(local, "t1", decisions, interrupt_id=intr["id"])
    with pytest.raises(InvalidDecision) as lib:
        await local.agent.aresume("t1", decisions, interrupt_id=intr["id"])
    assert_error(r, 422, "InvalidDecision", str(lib.value))
    after = await local.agent.aget_thread("t1")
    assert after.version == before.version and after.status == "interrupted"
    assert EXECUTED == []


async def test_limit_edit_rejected_by_tool_validation_is_422(local: Server) -> None:
    interrupt_of(await start(local, "limit 4", "t1"))
    r = await decide(local, "t1", [{"type": "edit", "edited_action": {
        "name": "set_limit", "args": {"n": 3}}}])
    assert_error(r, 422, "InvalidDecision")
    assert "n must be an even number" in r.json()["message"]
    respond = await decide(local, "t1", [{"type": "respond", "message": "x"}])
    assert_error(respond, 422, "InvalidDecision")
    assert "which this call does not allow" in respond.json()["message"]


async def test_stale_interrupt_and_no_pending_are_409(local: Server) -> None:
    intr = interrupt_of(await start(local, f"sql {SQL}", "t1"))
    r = await decide(local, "t1", [{"type": "approve"}], interrupt_id="not-it")
    assert_error(r, 409, "StaleInterrupt", str(StaleInterrupt("t1", "not-it", [intr["id"]])))
    ok = await decide(local, "t1", [{"type": "approve"}], interrupt_id=intr["id"])
    assert ok.status_code == 200
    # a second answer to the answered request (a double submit) is refused like the library
    again = await decide(local, "t1", [{"type": "approve"}], interrupt_id=intr["id"])
    with pytest.raises((InterruptConflict, StaleInterrupt)) as lib:
        await local.agent.aresume("t1", [{"type": "approve"}], interrupt_id=intr["id"])
    assert_error(again, 409, type(lib.value).__name__, str(lib.value))
    plain = await decide(local, "t1", [{"type": "approve"}])
    assert_error(plain, 409, "NoPendingInterrupt", http_terms(NoPendingInterrupt("t1")))
    assert len(EXECUTED) == 1


class _SlowLoads:
    """Delegating checkpointer whose loads wait for each other, so two resumes read the same
    version before either commits (a deterministic double submit)."""

    def __init__(self, inner: Any, parties: int) -> None:
        self.inner = inner
        self.barrier: asyncio.Barrier | None = None
        self.parties = parties

    async def load(self, thread_id: str, *, after_seq: int = 0) -> ThreadSnapshot | None:
        snap = await self.inner.load(thread_id, after_seq=after_seq)
        if self.barrier is not None and after_seq != ROW_ONLY:  # the resumes' loads, not a
            # server's read of who may see a run's events
            await asyncio.wait_for(self.barrier.wait(), 10)
        return snap  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
async def racing(agent: Agent) -> AsyncIterator[tuple[Server, _SlowLoads]]:
    slow = _SlowLoads(agent.checkpointer, 2)
    agent.checkpointer = slow  # type: ignore[assignment]
    async with running(agent) as s:
        yield s, slow


async def test_interrupt_conflict_is_409_and_the_call_runs_once(
    racing: tuple[Server, _SlowLoads]
) -> None:
    s, slow = racing
    intr = interrupt_of(await start(s, f"sql {SQL}", "t1"))
    slow.barrier = asyncio.Barrier(2)
    a, b = await asyncio.gather(
        decide(s, "t1", [{"type": "approve"}], interrupt_id=intr["id"]),
        decide(s, "t1", [{"type": "reject", "message": "no"}], interrupt_id=intr["id"]),
    )
    slow.barrier = None
    codes = sorted([a.status_code, b.status_code])
    assert codes == [200, 409], (a.text, b.text)
    loser = a if a.status_code == 409 else b
    assert_error(loser, 409, "InterruptConflict", str(InterruptConflict("t1", intr["id"])))
    winner = a if a.status_code == 200 else b
    assert winner.json()["status"] == "completed"
    assert len(EXECUTED) == (1 if winner is a else 0)
    decisions = [r for r in (await s.client.get("/api/threads/t1/audit")).json()["records"]
                 if r["kind"] == "decision"]
    assert len(decisions) == 1


async def test_partial_decisions_keep_the_rest_pending(local: Server) -> None:
    result = await start(local, "multi", "m")
    intr = interrupt_of(result)
    calls = [a["tool_call_id"] for a in intr["value"]["action_requests"]]
    r = await decide(local, "m", {calls[1]: {"type": "reject"}}, interrupt_id=intr["id"])
    assert r.json()["status"] == "interrupted"
    left = r.json()["interrupts"][0]["value"]["action_requests"]
    assert [a["tool_call_id"] for a in left] == [calls[0]]
    r = await decide(local, "m", {calls[0]: {"type": "approve"}}, interrupt_id=intr["id"])
    assert r.json()["status"] == "completed"
    assert EXECUTED == [("execute_sql", {"query": "SELECT 1"})]


async def test_answer_an_interrupt_question(local: Server) -> None:
    result = await start(local, "pick", "c")
    intr = interrupt_of(result)
    assert intr["kind"] == "input" and intr["value"] == {"question": "Which colour?"}
    wrong = await decide(local, "c", [{"type": "approve"}])
    assert_error(wrong, 422, "InvalidDecision")
    r = await local.client.post("/api/threads/c/answer", params={"wait": "true"},
                                json={"value": "teal", "interrupt_id": intr["id"]})
    assert r.status_code == 200, r.text
    assert r.json()["output"] == "Done. colour is teal"
    audit = (await local.client.get("/api/threads/c/audit")).json()["records"]
    answered = next(a for a in audit if a["kind"] == "input_answered")
    assert answered["actor"] == "local" and answered["data"]["value"] == "teal"


async def test_cancel_closes_pending_calls(local: Server) -> None:
    await start(local, f"sql {SQL}", "t1")
    r = await local.client.post("/api/threads/t1/cancel", json={"reason": "wrong ticket"})
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "idle"  # the thread's status, as GET says
    res = tool_results(r.json())[0]
    assert res["decision"] == "cancel" and "Reason: wrong ticket" in res["content"]
    t = (await local.client.get("/api/threads/t1")).json()
    assert t["status"] == "idle" and t["interrupts"] == []
    again = await local.client.post("/api/threads/t1/cancel")
    assert_error(again, 409, "NoPendingInterrupt")
    assert EXECUTED == []


async def test_remember_lists_and_revokes(local: Server) -> None:
    interrupt_of(await start(local, "twice SELECT 2", "t1"))
    r = await decide(local, "t1", [{"type": "approve", "remember": "thread"}])
    assert r.json()["status"] == "completed"
    assert [a for _, a in EXECUTED] == [{"query": "SELECT 2"}, {"query": "SELECT 2 -- again"}]
    rules = (await local.client.get("/api/threads/t1/remembered")).json()["remembered"]
    assert [(x["tool_name"], x["created_by"]) for x in rules] == [("execute_sql", "local")]
    audit = (await local.client.get("/api/threads/t1/audit")).json()["records"]
    assert [a["kind"] for a in audit if a["kind"] in ("rule_created", "auto_approved")] == [
        "rule_created", "auto_approved"]
    r = await local.client.delete("/api/threads/t1/remembered/execute_sql")
    assert r.status_code == 200 and r.json() == {"revoked": True}
    assert (await local.client.get("/api/threads/t1/remembered")).json()["remembered"] == []
    r = await local.client.delete("/api/threads/t1/remembered/execute_sql")
    assert_error(r, 404, "RuleNotFound")
    r = await local.client.post("/api/threads/t1/messages", params={"wait": "true"},
                                json={"message": "sql SELECT 3"})
    assert r.json()["status"] == "interrupted"  # the next call pauses again


async def test_bad_bodies_are_422(local: Server) -> None:
    r = await local.client.post("/api/threads", json={})
    assert_error(r, 422, "RequestValidationError")
    assert "message" in r.json()["message"]
    await start(local, f"sql {SQL}", "t1")
    r = await local.client.post("/api/threads/t1/decisions", json={"interrupt_id": "x"})
    assert_error(r, 422, "RequestValidationError")
    r = await local.client.post("/api/threads/t1/decisions", content=b"not json",
                                headers={"content-type": "application/json"})
    assert r.status_code == 422


# -- audit ------------------------------------------------------------------------------------


async def test_audit_log_pages_and_verifies(local: Server) -> None:
    interrupt_of(await start(local, f"sql {SQL}", "t1"))
    await decide(local, "t1", [{"type": "edit", "edited_action": {
        "name": "execute_sql", "args": {"query": "SELECT 1"}}}])
    records = (await local.client.get("/api/threads/t1/audit")).json()["records"]
    assert [r["kind"] for r in records] == ["message_posted", "run_started", "request_raised",
                                            "decision", "tool_started", "tool_finished"]
    d = records[3]
    assert d["data"]["args"] == {"query": SQL}
    assert d["data"]["edited_action"] == {"name": "execute_sql", "args": {"query": "SELECT 1"}}
    assert records[3]["prev_hash"] == records[2]["hash"]
    page = (await local.client.get("/api/audit", params={"limit": 2})).json()
    assert len(page["records"]) == 2 and page["next_after_id"] == page["records"][-1]["id"]
    rest = (await local.client.get("/api/audit", params={
        "after_id": page["next_after_id"]})).json()
    assert [r["seq"] for r in page["records"] + rest["records"]] == [1, 2, 3, 4, 5, 6]
    assert rest["next_after_id"] is None
    v = (await local.client.get("/api/audit/verify")).json()
    assert v == {"ok": True, "problems": [], "unchecked": []}
    v = (await local.client.get("/api/audit/verify", params={"thread_id": "t1"})).json()
    assert v["ok"] is True


async def test_expiry_sweeper_rejects_overdue_requests(agent: Agent) -> None:
    from datetime import timedelta

    async with running(agent, expiry_interval=timedelta(milliseconds=50)) as s:
        intr = interrupt_of(await start(s, "purge", "x"))
        assert intr["value"]["review_configs"][0]["expires_at"] is not None
        await eventually(lambda: _status(s, "x", "completed"))
        t = (await s.client.get("/api/threads/x")).json()
        expired = [h for h in t["history"] if h["kind"] == "expired"]
        assert expired and expired[0]["actor"] == "system:expiry"
        assert tool_results({"messages": t["messages"]})[0]["decision"] == "expire"
    assert EXECUTED == []


# -- inbox stream ---------------------------------------------------------------------------


async def test_inbox_stream_shows_resolved_requests(local: Server) -> None:
    intr = interrupt_of(await start(local, f"sql {SQL}", "t1"))
    async with sse(local.app, "/api/inbox/events") as inbox:
        await decide(local, "t1", [{"type": "reject"}], interrupt_id=intr["id"], wait=False)
        ev = await inbox.until(lambda e: e["event"] == "request_resolved")
        assert ev["data"]["interrupt_id"] == intr["id"]
        upd = await inbox.until(lambda e: e["event"] == "thread_updated"
                                and e["data"]["thread"]["status"] == "completed")
        assert upd["data"]["thread"]["pending"] == []
        assert isinstance(datetime.fromisoformat(upd["data"]["thread"]["updated_at"]), datetime)
        assert upd["id"].count("-") == 1


async def test_inbox_stream_sees_changes_made_outside_the_server(local: Server) -> None:
    """A thread advanced by another writer of the same store (here the library directly, as
    another process would) reaches the inbox stream through the store watcher."""
    async with sse(local.app, "/api/inbox/events") as inbox:
        await local.agent.ainvoke(f"sql {SQL}", thread_id="outside")
        ev = await inbox.until(lambda e: e["event"] == "request_raised")
        assert ev["data"]["thread"]["thread_id"] == "outside"


async def test_thread_stream_replays_after_an_event_id(local: Server) -> None:
    r = await local.client.post("/api/threads", json={"message": "hello", "thread_id": "h"})
    url = r.json()["events_url"]
    await eventually(lambda: _status(local, "h", "completed"))
    async with sse(local.app, url) as events:  # subscribed after the run ended
        done = await events.until(lambda e: e["event"] == "run_completed")
    assert done["data"]["result"]["output"] == "You said: hello"
    assert any(e["event"] == "model_text_delta" for e in events.seen)


async def test_urls_quote_the_thread_id(local: Server) -> None:
    r = await local.client.post("/api/threads", json={"message": "hello", "thread_id": "a b<c>"})
    assert r.status_code == 422 and "not a valid thread id" in r.json()["message"]
    r = await local.client.post("/api/threads", json={"message": "hello",
                                                      "thread_id": "ops:a@b.c_1-2"})
    assert r.status_code == 202
    assert r.json()["thread_url"] == "/api/threads/ops%3Aa%40b.c_1-2"
    await eventually(lambda: _status(local, "ops:a@b.c_1-2", "completed"))
    r = await local.client.get(r.json()["thread_url"])
    assert r.json()["thread_id"] == "ops:a@b.c_1-2"


async def test_a_stray_key_next_to_decisions_is_reported(local: Server) -> None:
    await start(local, f"sql {SQL}", "stray")
    r = await local.client.post("/api/threads/stray/decisions",
                                json={"decisions": [{"type": "approve"}], "interupt_id": "x"})
    assert_error(r, 422, "RequestValidationError")
    message = r.json()["message"]
    assert "unknown top-level key(s) 'interupt_id' next to 'decisions'" in message
    assert '"interrupt_id"' in message  # the spelling that works
    t = (await local.client.get("/api/threads/stray")).json()
    assert t["status"] == "interrupted" and EXECUTED == []
    # the reviewer field stays tolerated (ignored: the token decides who the reviewer is)
    ok = await local.client.post("/api/threads/stray/decisions", params={"wait": "true"},
                                 json={"decisions": [{"type": "approve"}], "reviewer": "x"})
    assert ok.status_code == 200, ok.text
