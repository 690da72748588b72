"""The LangGraph-compatible API in process: authentication headers, the Agent Inbox origin,
and resumes that are refused before anything changes."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from interlock import Agent, HumanInTheLoop, MemoryCheckpointer, ScriptedModel

from .conftest import ALICE, BOB, TOKENS, bearer, running
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
        await refused({"command": {"resume": {"decisions": [{"type": "approve"}] * 3}}}, 422,
                      "InvalidDecision", "got 3 decision(s) for 2 pending")
        await refused({"command": {"resume": {ids[0]: {"decisions": [{"type": "approve"}] * 2}}}},
                      422, "InvalidDecision", "one call")
        await refused({"command": {"resume": {"decisions": [
            {"type": "approve", "tool_call_id": "nope"}]}}}, 422, "InvalidDecision",
            "position 1")
        await refused({"command": {"goto": "tools"}}, 422, "UnsupportedCommand")
        await refused({"input": {"messages": [{"role": "user", "content": "again"}]}}, 409,
                      "ThreadInterrupted")
        await refused({"input": {"foo": 1}}, 422, "UnsupportedInput")
        await refused({"command": {"resume": {ids[0]: {"type": "response",
                                                       "args": "x" * 64_001}}}},
                      422, "LimitExceeded", "max_message_chars")
        r = await c.post(url + "/stream", headers=h, json={
            "assistant_id": "agent", "stream_mode": "debug",
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


def _sse(body: str) -> list[tuple[str, Any]]:
    out = []
    for block in body.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            out.append((lines["event"], json.loads(lines["data"])))
    return out


async def test_updates_of_a_run_that_gets_ahead_of_its_stream() -> None:
    """In process the run reaches its pause before the stream first reads the thread; the
    model's tool-call message is still sent as an update (the stream counts from what was
    stored when the run was accepted)."""
    agent = make_agent(MemoryCheckpointer())
    async with running(agent, langgraph_api=True) as s:
        r = await s.client.post("/langgraph/threads", json={})
        tid = r.json()["thread_id"]
        r = await s.client.post(f"/langgraph/threads/{tid}/runs/stream", json={
            "assistant_id": "agent", "stream_mode": ["updates"],
            "input": {"messages": [{"role": "user", "content": "sql SELECT 9"}]}})
        assert r.status_code == 200, r.text
        updates = [d for e, d in _sse(r.text) if e == "updates"]
        assert [list(u) for u in updates] == [["model"], ["__interrupt__"]]
        (m,) = updates[0]["model"]["messages"]
        assert m["tool_calls"][0]["args"] == {"query": "SELECT 9"}


UI_STREAM = {"stream_mode": ["values", "messages-tuple", "custom"], "stream_subgraphs": True,
             "stream_resumable": True}
"""What useStream sends with every submit of Agent Chat UI (src/components/thread/index.tsx,
langchain-ai/agent-chat-ui at fdc87e6; the hook adds messages-tuple and custom)."""


async def test_streamed_text_carries_the_id_its_message_is_stored_under() -> None:
    """A run that is over before its stream relays the first piece of text (in process, a
    plain answer): the ``messages-tuple`` chunks carry the id of the model message the state
    stores, not the id of the message after it, in the first turn and in a follow-up.
    (Agent Chat UI showed each answer twice while the chunks and the stored message had two
    ids, and the next turn's user message took the chunks' id.)"""
    agent = make_agent(MemoryCheckpointer())
    async with running(agent, langgraph_api=True) as s:
        tid = (await s.client.post("/langgraph/threads", json={})).json()["thread_id"]
        for n, text in enumerate(["hello there", "and again", "sql SELECT 5"]):
            r = await s.client.post(f"/langgraph/threads/{tid}/runs/stream", json={
                "assistant_id": "agent", **UI_STREAM,
                "input": {"messages": [{"type": "human", "content": text}]}})
            assert r.status_code == 200, r.text
            parts = _sse(r.text)
            stored = [d for e, d in parts if e == "values"][-1]["messages"]
            chunks = [d[0] for e, d in parts if e == "messages" and
                      d[0]["type"] == "AIMessageChunk" and d[0]["content"]]
            answer = stored[-1]  # the answer, or the message proposing the call (paused)
            assert answer["type"] == "ai" and bool(answer["tool_calls"]) == (n == 2)
            assert chunks and {c["id"] for c in chunks} == {answer["id"]}, (chunks, stored)
            assert "".join(c["content"] for c in chunks) == answer["content"]
            assert len({m["id"] for m in stored}) == len(stored)


async def test_agent_chat_ui_requests() -> None:
    """The HTTP requests of Agent Chat UI (langchain-ai/agent-chat-ui at fdc87e6), in the order
    its code makes them, each cited: the reply streams, an interrupt of a turn with two calls
    is answered with one decision each, "Mark as resolved" ends the next one, and editing an
    earlier message or regenerating (a run from an earlier checkpoint) is refused, changing
    nothing."""
    EXECUTED.clear()
    agent = make_agent(MemoryCheckpointer())
    async with running(agent, langgraph_api=True) as s:
        c = s.client

        async def stream(url: str, body: dict[str, Any]) -> list[tuple[str, Any]]:
            r = await c.post(url, json={"assistant_id": "agent", **UI_STREAM, **body})
            assert r.status_code == 200, r.text
            return _sse(r.text)

        assert (await c.get("/langgraph/info")).status_code == 200  # providers/Stream.tsx
        r = await c.post("/langgraph/threads/search", json={  # providers/Thread.tsx
            "metadata": {"graph_id": "agent"}, "limit": 100})
        assert r.status_code == 200
        # useStream creates the thread, then streams the run (components/thread/index.tsx)
        tid = (await c.post("/langgraph/threads", json={})).json()["thread_id"]
        human = {"id": "m-1", "type": "human", "content": [{"type": "text", "text": "multi"}]}
        parts = await stream(f"/langgraph/threads/{tid}/runs/stream",
                             {"input": {"messages": [human]}})
        last = [d for e, d in parts if e == "values"][-1]
        assert len(last["__interrupt__"]) == 2
        assert any(e == "messages" for e, _ in parts)
        history = await c.post(f"/langgraph/threads/{tid}/history", json={"limit": 10})
        assert history.status_code == 200 and history.json()[0]["next"] == ["tools"]

        # the HITL card: one resume per shown action request
        # (agent-inbox/hooks/use-interrupted-actions.tsx: resume {decisions})
        parts = await stream(f"/langgraph/threads/{tid}/runs/stream", {
            "input": {}, "command": {"resume": {"decisions": [{"type": "approve"}]}}})
        last = [d for e, d in parts if e == "values"][-1]
        assert [i["value"]["action_requests"][0]["name"] for i in last["__interrupt__"]] == [
            "write_file"]
        assert EXECUTED == [("execute_sql", {"query": "SELECT 1"})]
        # "Mark as resolved" (use-interrupted-actions.tsx: command {goto: END})
        parts = await stream(f"/langgraph/threads/{tid}/runs/stream",
                             {"input": {}, "command": {"goto": "__end__"}})
        assert "__interrupt__" not in [d for e, d in parts if e == "values"][-1]
        state = await agent.aget_thread(tid)
        assert state.status != "interrupted" and EXECUTED == [
            ("execute_sql", {"query": "SELECT 1"})]
        tool = [m for m in state.messages if m.role == "tool"][-1]
        assert "resolved" in tool.content
        r = await c.post(f"/langgraph/threads/{tid}/runs/stream", json={
            "assistant_id": "agent", "input": {}, "command": {"goto": "__end__"}})
        assert r.status_code == 409 and r.json()["error"] == "NoPendingInterrupt"

        # editing the first message (messages/human.tsx) or regenerating (index.tsx) sends
        # the parent checkpoint of that message: branching is refused, nothing is appended
        history = (await c.post(f"/langgraph/threads/{tid}/history", json={})).json()
        parent = history[0]["parent_checkpoint"]
        count = len(state.messages)
        for body in ({"input": {"messages": [{**human, "content": "sql x"}]},
                      "checkpoint": parent},
                     {"input": None, "checkpoint": parent}):
            r = await c.post(f"/langgraph/threads/{tid}/runs/stream",
                             json={"assistant_id": "agent", **UI_STREAM, **body})
            assert r.status_code == 422 and r.json()["error"] == "UnsupportedCheckpoint", r.text
            assert "branch" in r.json()["message"]
        assert len((await agent.aget_thread(tid)).messages) == count
        # from the latest checkpoint it is an ordinary message
        parts = await stream(f"/langgraph/threads/{tid}/runs/stream", {
            "input": {"messages": [{**human, "content": "hello"}]},
            "checkpoint": history[0]["checkpoint"]})
        assert [d for e, d in parts if e == "values"][-1]["messages"][-1]["content"] == \
            "You said: hello"


async def test_each_interrupt_carries_a_schema_of_its_answer() -> None:
    """``response_schema`` on every pending call's interrupt (LangGraph's
    ``Interrupt.response_schema``): a client can check its resume before sending it."""
    from jsonschema import Draft202012Validator

    agent = make_agent(MemoryCheckpointer())
    async with running(agent, langgraph_api=True) as s:
        c = s.client
        tid, pending = await _paused(c, {}, "batch")
        by_tool = {p["value"]["action_requests"][0]["name"]: p for p in pending}

        def ok(name: str, resume: Any) -> bool:
            return Draft202012Validator(by_tool[name]["response_schema"]).is_valid(resume)

        assert ok("execute_sql", {"decisions": [{"type": "approve"}]})
        assert ok("set_limit", {"decisions": [{"type": "edit", "edited_action": {
            "name": "set_limit", "args": {"n": 6}}}]})
        assert not ok("set_limit", {"decisions": [{"type": "respond", "message": "x"}]})
        assert not ok("set_limit", {"decisions": [{"type": "edit", "edited_action": {
            "name": "set_limit", "args": {"n": "six"}}}]})
        assert ok("ask_user", {"decisions": [{"type": "respond", "message": "eu"}]})
        assert not ok("ask_user", {"decisions": [{"type": "approve"}]})
        assert not ok("execute_sql", {"decisions": [{"type": "approve"}] * 2})
        # one interrupt per turn: one decision per call, each checked against its own policy
        r = await c.get(f"/langgraph/per-turn/threads/{tid}/state")
        (turn,) = [i for i in r.json()["interrupts"] if "action_requests" in i["value"]]
        schema = Draft202012Validator(turn["response_schema"])
        good = [{"type": "approve"}, {"type": "reject"}, {"type": "approve"},
                {"type": "respond", "message": "eu"}]
        assert schema.is_valid({"decisions": good})
        assert not schema.is_valid({"decisions": [*good[:3], {"type": "approve"}]})
        # Agent Inbox: a one-item list of HumanResponses the config allows
        r = await c.get(f"/langgraph/agent-inbox/threads/{tid}/state")
        inbox = {i["value"]["action_request"]["action"]: i for i in r.json()["interrupts"]}
        ask = Draft202012Validator(inbox["ask_user"]["response_schema"])
        assert ask.is_valid([{"type": "response", "args": "eu"}])
        assert not ask.is_valid([{"type": "accept", "args": None}])


async def test_interrupt_before_is_refused_and_nothing_runs() -> None:
    """LangGraph's ``interrupt_before`` / ``interrupt_after`` ask for a pause interlock does
    not make (it pauses by the agent's review policy): refused with 422, nothing stored or
    run, instead of running the graph without the pause the client asked for. Empty values
    are no request and pass."""
    EXECUTED.clear()
    agent = make_agent(MemoryCheckpointer())
    async with running(agent, tokens=TOKENS, langgraph_api=True) as s:
        c, alice = s.client, {"x-api-key": ALICE}
        tid = (await c.post("/langgraph/threads", json={}, headers=alice)).json()["thread_id"]
        run = {"assistant_id": "agent",
               "input": {"messages": [{"role": "user", "content": "purge"}]}}
        for asked in ({"interrupt_before": ["tools"]}, {"interrupt_before": "*"},
                      {"interrupt_after": ["model"]}):
            r = await c.post(f"/langgraph/threads/{tid}/runs/wait", headers=alice,
                             json={**run, **asked})
            assert r.status_code == 422 and r.json()["error"] == "UnsupportedInterrupt", r.text
        assert EXECUTED == [] and (await c.get(f"/langgraph/threads/{tid}/runs",
                                               headers=alice)).json() == []
        r = await c.post(f"/langgraph/threads/{tid}/runs/wait", headers=alice,
                         json={**run, "interrupt_before": [], "interrupt_after": None})
        assert r.status_code == 200 and r.json()["__interrupt__"], r.text


async def test_runs_are_listed_to_readers_of_their_thread_and_history_pages_end() -> None:
    """A run refused on a thread created here (it never stored the thread) is listed to the
    thread's creator only; a thread nobody created is a 404, not an empty list. Paging back
    through a thread's history ends: there is nothing ``before`` its one state."""
    from .conftest import BOB

    agent = make_agent(MemoryCheckpointer())
    async with running(agent, tokens=TOKENS, langgraph_api=True) as s:
        c, alice, bob = s.client, {"x-api-key": ALICE}, {"x-api-key": BOB}
        tid = (await c.post("/langgraph/threads", json={}, headers=alice)).json()["thread_id"]
        r = await c.post(f"/langgraph/threads/{tid}/runs/wait", headers=alice, json={
            "assistant_id": "agent", "metadata": {"secret": "alice-only"},
            "input": {"messages": [{"role": "user", "content": "nul \u0000 here"}]}})
        assert r.status_code == 422, r.text  # refused by the agent: nothing stored
        listed = await c.get(f"/langgraph/threads/{tid}/runs", headers=alice)
        assert [x["metadata"] for x in listed.json()] == [{"secret": "alice-only"}]
        run_id = listed.json()[0]["run_id"]
        for path in (f"/langgraph/threads/{tid}/runs",
                     f"/langgraph/threads/{tid}/runs/{run_id}",
                     f"/langgraph/threads/{tid}/runs/{run_id}/join"):
            r = await c.get(path, headers=bob)
            assert r.status_code == 403 and "alice-only" not in r.text, (path, r.text)
        r = await c.get("/langgraph/threads/nobody-made-this/runs", headers=alice)
        assert r.status_code == 404, r.text

        tid, _ = await _paused(c, alice, "sql SELECT 1")
        first = (await c.post(f"/langgraph/threads/{tid}/history", json={},
                              headers=alice)).json()
        assert len(first) == 1
        older = await c.post(f"/langgraph/threads/{tid}/history", headers=alice,
                             json={"limit": 10, "before": first[-1]["checkpoint"]})
        assert older.status_code == 200 and older.json() == []


async def test_creating_a_thread_that_exists_is_a_conflict_unless_asked_otherwise() -> None:
    """``threads.create(thread_id=...)`` of a thread that exists is 409 ``ThreadExists`` (the
    SDK's default ``if_exists="raise"``), also while it has had no run yet; with
    ``do_nothing`` it is returned as it is (its metadata unchanged)."""
    agent = make_agent(MemoryCheckpointer())
    async with running(agent, tokens=TOKENS, langgraph_api=True) as s:
        c, alice = s.client, {"x-api-key": ALICE}
        made = await c.post("/langgraph/threads", headers=alice,
                            json={"thread_id": "t-new", "metadata": {"v": 1}})
        assert made.status_code == 200, made.text
        again = await c.post("/langgraph/threads", headers=alice,
                             json={"thread_id": "t-new", "metadata": {"v": 2}})
        assert again.status_code == 409 and again.json()["error"] == "ThreadExists"
        same = await c.post("/langgraph/threads", headers=alice, json={
            "thread_id": "t-new", "metadata": {"v": 3}, "if_exists": "do_nothing"})
        assert same.status_code == 200 and same.json()["metadata"]["v"] == 1, same.text
        await c.post("/langgraph/threads/t-new/runs/wait", headers=alice, json={
            "assistant_id": "agent", "input": {"messages": [{"role": "user",
                                                             "content": "hello"}]}})
        stored = await c.post("/langgraph/threads", headers=alice, json={"thread_id": "t-new"})
        assert stored.status_code == 409 and stored.json()["error"] == "ThreadExists"


async def test_the_state_at_the_latest_checkpoint_is_the_state() -> None:
    """``threads.get_state(checkpoint_id=...)`` and ``get_state(checkpoint={...})`` (the SDK's
    ``GET /state/{id}`` and ``POST /state/checkpoint``) at the thread's latest checkpoint
    give its state; at any other, a 404 that says only the current state is kept."""
    agent = make_agent(MemoryCheckpointer())
    async with running(agent, tokens=TOKENS, langgraph_api=True) as s:
        c, alice = s.client, {"x-api-key": ALICE}
        tid, _ = await _paused(c, alice, "sql SELECT 1")
        state = (await c.get(f"/langgraph/threads/{tid}/state", headers=alice)).json()
        head = state["checkpoint"]["checkpoint_id"]
        at = await c.get(f"/langgraph/threads/{tid}/state/{head}", headers=alice)
        assert at.status_code == 200 and at.json() == state, at.text
        at = await c.post(f"/langgraph/threads/{tid}/state/checkpoint", headers=alice,
                          json={"checkpoint": state["checkpoint"]})
        assert at.status_code == 200 and at.json() == state, at.text
        for old in (state["parent_checkpoint"]["checkpoint_id"], "nope"):
            r = await c.get(f"/langgraph/threads/{tid}/state/{old}", headers=alice)
            assert r.status_code == 404 and r.json()["error"] == "CheckpointNotFound", r.text
            assert head in r.json()["message"]
        r = await c.get(f"/langgraph/threads/no-such-thread/state/{head}", headers=alice)
        assert r.status_code == 404 and r.json()["error"] == "ThreadNotFound", r.text


async def test_a_response_without_an_id_never_skips_to_a_call_its_sender_was_not_shown(
) -> None:
    """Invariant 1 on the unkeyed resume shapes real clients send (Agent Inbox's
    ``[HumanResponse]``, Agent Chat UI's ``{"decisions": [...]}``, a bare decision, a
    request id with ``{"decisions": [...]}``): they answer the first pending call. When
    another reviewer decided the call before it since, the call now first was not the one
    shown: refused (409 PositionTaken), nothing stored, nothing run. The same reviewer
    answering the calls one at a time, and a response keyed by the call's interrupt id, go
    on as before."""
    EXECUTED.clear()
    agent = make_agent(MemoryCheckpointer())
    async with running(agent, tokens=TOKENS, langgraph_api=True) as s:
        c = s.client
        for base in ("/langgraph", "/langgraph/per-turn"):
            tid, shown = await _paused(c, bearer(ALICE), "triple")
            state = (await c.get(f"{base}/threads/{tid}/state",
                                 headers=bearer(ALICE))).json()
            request_id = state["interrupts"][0]["id"]
            url = f"{base}/threads/{tid}/runs/wait"
            # bob rejects the first call, named by its interrupt id
            r = await c.post(url, headers=bearer(BOB), json={"assistant_id": "agent",
                             "command": {"resume": {shown[0]["id"]: {"type": "reject"}}}})
            assert r.status_code == 200, r.text
            rows = len(await agent.aaudit(tid))
            for resume in ([{"type": "accept", "args": None}],
                           {"decisions": [{"type": "approve"}]},
                           [{"type": "approve"}],
                           {"type": "approve"},
                           {"type": "accept", "args": None}):
                r = await c.post(url, headers=bearer(ALICE),
                                 json={"assistant_id": "agent", "command": {"resume": resume}})
                assert r.status_code == 409, (base, resume, r.text)
                body = r.json()
                assert body["error"] == "PositionTaken", body
                assert "'call_1_0' (execute_sql) was decided by 'bob'" in body["message"]
                assert "'call_1_1' (write_file)" in body["message"]
            if base.endswith("per-turn"):  # the whole request's id, decisions in order
                r = await c.post(url, headers=bearer(ALICE), json={
                    "assistant_id": "agent", "command": {"resume": {
                        request_id: {"decisions": [{"type": "approve"}]}}}})
                assert r.status_code == 409 and r.json()["error"] == "PositionTaken", r.text
            assert EXECUTED == [] and len(await agent.aaudit(tid)) == rows
            # bob himself may go on in order; alice may name the call she reviews
            r = await c.post(url, headers=bearer(BOB), json={"assistant_id": "agent",
                             "command": {"resume": [{"type": "accept", "args": None}]}})
            assert r.status_code == 200, r.text
            assert [name for name, _ in EXECUTED] == ["write_file"]
            state = (await c.get(f"/langgraph/threads/{tid}/state",
                                 headers=bearer(ALICE))).json()
            (last,) = state["interrupts"]
            r = await c.post(f"/langgraph/threads/{tid}/runs/wait", headers=bearer(ALICE),
                             json={"assistant_id": "agent",
                                   "command": {"resume": {last["id"]: {"type": "reject"}}}})
            assert r.status_code == 200 and "__interrupt__" not in r.json(), r.text
            EXECUTED.clear()

        # one reviewer answering a turn's calls one at a time, without ids (Agent Inbox)
        tid, shown = await _paused(c, bearer(ALICE), "triple")
        for _ in shown:
            r = await c.post(f"/langgraph/threads/{tid}/runs/wait", headers=bearer(ALICE),
                             json={"assistant_id": "agent",
                                   "command": {"resume": [{"type": "accept", "args": None}]}})
            assert r.status_code == 200, r.text
        assert [name for name, _ in EXECUTED] == ["execute_sql", "write_file", "set_limit"]


async def test_a_lone_question_takes_any_value_and_options_that_change_what_happens_are_refused(
) -> None:
    """When only an ``interrupt()`` question waits, any resume value is its answer (a list, an
    object with ``type`` too), as in LangGraph. A run's ``after_seconds`` and ``webhook`` and a
    thread's ``supersteps`` would change what happens: refused (422 UnsupportedOption) with
    nothing created or run, never silently ignored."""
    EXECUTED.clear()
    agent = make_agent(MemoryCheckpointer())
    async with running(agent, langgraph_api=True) as s:
        c = s.client
        for answer in (["blue", "green"], {"type": "colour", "value": "blue"},
                       {"decisions": "none"}):
            tid, pending = await _paused(c, {}, "pick")
            assert len(pending) == 1
            r = await c.post(f"/langgraph/threads/{tid}/runs/wait", json={
                "assistant_id": "agent", "command": {"resume": answer}})
            assert r.status_code == 200 and "__interrupt__" not in r.json(), r.text
            assert EXECUTED[-1] == ("pick_colour", {"answer": answer})
        before = len(EXECUTED)
        tid, _ = await _paused(c, {}, "sql DELETE FROM t")
        for extra, word in (({"after_seconds": 30}, "after_seconds"),
                            ({"webhook": "http://127.0.0.1:9/done"}, "webhook")):
            r = await c.post(f"/langgraph/threads/{tid}/runs/wait", json={
                "assistant_id": "agent", "command": {"resume": {"decisions": [
                    {"type": "approve"}]}}, **extra})
            assert r.status_code == 422 and r.json()["error"] == "UnsupportedOption", r.text
            assert word in r.json()["message"]
        assert len(EXECUTED) == before
        r = await c.post("/langgraph/threads", json={"thread_id": "with-steps", "supersteps": [
            {"updates": [{"values": {"messages": []}, "as_node": "model"}]}]})
        assert r.status_code == 422 and r.json()["error"] == "UnsupportedOption", r.text
        r = await c.get("/langgraph/threads/with-steps")
        assert r.status_code == 404, r.text


async def test_what_is_not_supported_says_so() -> None:
    """Cancelling or deleting a run, deleting, updating, copying, counting or pruning threads:
    a 422 that says the operation is not supported and what to do instead, not a bare 404 or
    405 that reads as a wrong URL; nothing changes."""
    agent = make_agent(MemoryCheckpointer())
    async with running(agent, langgraph_api=True) as s:
        c = s.client
        tid, _ = await _paused(c, {}, "sql DELETE FROM t")
        for method, path, word in (
                ("POST", f"/langgraph/threads/{tid}/runs/r1/cancel", "Cancelling a run"),
                ("DELETE", f"/langgraph/threads/{tid}/runs/r1", "Deleting a run"),
                ("DELETE", f"/langgraph/threads/{tid}", "Deleting a thread"),
                ("PATCH", f"/langgraph/threads/{tid}", "Updating a thread"),
                ("POST", f"/langgraph/threads/{tid}/copy", "Copying a thread"),
                ("POST", "/langgraph/threads/count", "Counting threads"),
                ("POST", "/langgraph/threads/prune", "Pruning threads")):
            r = await c.request(method, path, json={})
            assert r.status_code == 422, (path, r.text)
            body = r.json()
            assert body["error"] == "UnsupportedOperation" and word in body["message"], body
        state = (await c.get(f"/langgraph/threads/{tid}/state")).json()
        assert state["interrupts"] and state["values"]["messages"]


async def test_an_unkeyed_response_never_goes_to_a_sub_agents_call_after_another_decision(
) -> None:
    """Invariant 1 with a sub-agent: the thread shows its own ``execute_sql`` first, then the
    sub-agent's ``drop_table``. bob approves ``execute_sql`` by its id; alice's unkeyed
    accept would now decide the sub-agent's call, which she may not have been shown:
    refused (409 PositionTaken), nothing stored, nothing run."""
    ran: list[str] = []

    async def execute_sql(query: str) -> str:
        """Run SQL."""
        ran.append(f"execute_sql {query}")
        return "ok"

    async def drop_table(table: str) -> str:
        """Drop a table."""
        ran.append(f"drop_table {table}")
        return "dropped"

    from interlock import ToolMessage, UserMessage, tool

    def child_script(messages: list[Any]) -> Any:
        if isinstance(messages[-1], UserMessage):
            return {"name": "drop_table", "args": {"table": "users"}, "id": "d1"}
        return "child done"

    def parent_script(messages: list[Any]) -> Any:
        if isinstance(messages[-1], UserMessage):
            return [{"name": "dba", "args": {"task": "drop"}, "id": "ask_dba"},
                    {"name": "execute_sql", "args": {"query": "P"}, "id": "p1"}]
        return "done" if isinstance(messages[-1], ToolMessage) else "?"

    store = MemoryCheckpointer()
    gate = HumanInTheLoop(interrupt_on={"drop_table": True}, interrupt_mode="per_call")
    child = Agent(name="dba", model=ScriptedModel(child_script),
                  tools=[tool(drop_table)], middleware=[gate], checkpointer=store)
    parent = Agent(name="agent", model=ScriptedModel(parent_script),
                   tools=[child.as_tool(), tool(execute_sql)],
                   middleware=[HumanInTheLoop(interrupt_on={"execute_sql": True},
                                              interrupt_mode="per_call")],
                   checkpointer=store)
    async with running(parent, tokens=TOKENS, langgraph_api=True) as s:
        c = s.client
        tid, shown = await _paused(c, bearer(ALICE), "go")
        names = [i["value"]["action_requests"][0]["name"] for i in shown]
        assert set(names) == {"execute_sql", "drop_table"}, shown
        own = next(i for i, n in zip(shown, names, strict=True) if n == "execute_sql")
        url = f"/langgraph/threads/{tid}/runs/wait"
        r = await c.post(url, headers=bearer(BOB), json={"assistant_id": "agent", "command": {
            "resume": {own["id"]: {"type": "accept", "args": None}}}})
        assert r.status_code == 200, r.text
        assert ran == ["execute_sql P"]
        for resume in ([{"type": "accept", "args": None}], {"decisions": [{"type": "approve"}]},
                       {"type": "accept", "args": None}):
            r = await c.post(url, headers=bearer(ALICE),
                             json={"assistant_id": "agent", "command": {"resume": resume}})
            assert r.status_code == 409 and r.json()["error"] == "PositionTaken", (resume,
                                                                                     r.text)
            assert "'p1' (execute_sql) was decided by 'bob'" in r.json()["message"]
        assert ran == ["execute_sql P"]
