"""Invariant 1 in the moment between reading a resume and storing it: a response sent without
an interrupt id (what the Agent Chat UI and the Agent Inbox send) is checked against the
request its sender was shown, and then stored. If, in between, another reviewer answers that
request and the agent asks about a new call, the response must not decide the new call: it is
bound to the request it was checked against and refused (409), and nothing else runs.

The moment is made to happen every time: the server's runner is wrapped so that the other
reviewer's decision lands after the server read the response and before the core stores it.
Through the real ``langgraph-sdk`` client (``/langgraph``) and the HTTP API (``/api``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import ConflictError

from interlock import SqliteCheckpointer

from .conftest import ADMIN, ALICE, TOKENS, bearer
from .live import LiveServer
from .server_agents import EXECUTED, make_agent

FIRST, SECOND = "SELECT 42", "SELECT 42 -- again"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    EXECUTED.clear()
    s = LiveServer(make_agent(SqliteCheckpointer(tmp_path / "window.db")), tokens=TOKENS,
                   langgraph_api=True)
    yield s
    s.stop()


def _pending(server: LiveServer, thread_id: str) -> tuple[str, str]:
    """(interrupt id, query) of the request pending on the thread, read by an admin."""
    r = httpx.get(f"{server.url}/api/threads/{thread_id}", headers=bearer(ADMIN), timeout=30)
    r.raise_for_status()
    [intr] = r.json()["interrupts"]
    return intr["id"], intr["value"]["action_requests"][0]["args"]["query"]


def _bob_answers_first(server: LiveServer, thread_id: str) -> list[str]:
    """Wrap the server's runner: the next resume on ``thread_id`` is preceded by Bob's
    approval of the request pending then (the agent then asks about the next call)."""
    runner = server.state.runner
    original = runner.resume
    done: list[str] = []

    async def resume(tid: str, decisions: Any, **kw: Any) -> Any:
        if tid == thread_id and not done:
            iid, query = await asyncio.to_thread(_pending, server, thread_id)
            assert query == FIRST
            await server.agent.aresume(thread_id, [{"type": "approve"}], interrupt_id=iid,
                                       reviewer="bob")
            done.append(iid)
        return await original(tid, decisions, **kw)

    runner.resume = resume  # type: ignore[method-assign]
    return done


def _start(server: LiveServer, thread_id: str) -> None:
    r = httpx.post(f"{server.url}/api/threads", params={"wait": "true"}, headers=bearer(ADMIN),
                   json={"thread_id": thread_id, "message": f"twice {FIRST}"}, timeout=30)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("resume", [
    {"decisions": [{"type": "approve"}]},  # the Agent Chat UI
    [{"type": "approve"}],
    {"type": "approve"},
], ids=["decisions", "list", "one"])
def test_a_langgraph_resume_without_id_never_decides_a_request_raised_while_it_was_stored(
        server: LiveServer, resume: Any) -> None:
    _start(server, "lg")
    client = get_sync_client(url=f"{server.url}/langgraph", api_key=ALICE)
    state = client.threads.get_state("lg")  # alice reads the thread: the first query
    assert state["tasks"][0]["interrupts"][0]["value"]["action_requests"][0]["args"] == {
        "query": FIRST}
    answered = _bob_answers_first(server, "lg")
    with pytest.raises(ConflictError) as refused:
        client.runs.create("lg", "agent", command={"resume": resume})
    assert refused.value.body["error"] in ("InterruptConflict", "StaleInterrupt")
    assert answered  # bob's approval landed in between
    assert EXECUTED == [("execute_sql", {"query": FIRST})]  # bob's, once; not the second
    assert _pending(server, "lg")[1] == SECOND  # still waits for someone who saw it


def test_an_api_decision_without_id_never_decides_a_request_raised_while_it_was_stored(
        server: LiveServer) -> None:
    _start(server, "api")
    r = httpx.get(f"{server.url}/api/threads/api", headers=bearer(ALICE), timeout=30)
    assert r.json()["interrupts"][0]["value"]["action_requests"][0]["args"] == {
        "query": FIRST}
    answered = _bob_answers_first(server, "api")
    r = httpx.post(f"{server.url}/api/threads/api/decisions", headers=bearer(ALICE),
                   params={"wait": "true"}, json={"decisions": [{"type": "approve"}]},
                   timeout=30)
    assert r.status_code == 409, r.text
    assert r.json()["error"] in ("InterruptConflict", "StaleInterrupt")
    assert answered
    assert EXECUTED == [("execute_sql", {"query": FIRST})]
    assert _pending(server, "api")[1] == SECOND
