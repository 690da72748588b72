"""Size limits at the boundary: an oversize body is refused with 413, an oversize field with
422 naming the limit, and the stored state is byte-identical before and after."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from interlock import SqliteCheckpointer
from interlock.server import Limits
from server.conftest import BOB, CAROL, Server, bearer, running
from server.server_agents import EXECUTED, make_agent

LIMITS = Limits(max_body_bytes=32 * 1024, max_message_chars=2000, max_args_bytes=1000,
                max_answer_bytes=500)


def files(directory: Path) -> dict[str, str]:
    """Digest of every file of the store (database, WAL, shared memory)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.iterdir()) if p.is_file()}


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[Server, Path]]:
    store = tmp_path / "store"
    store.mkdir()
    agent = make_agent(SqliteCheckpointer(store / "i.db"))
    async with running(agent, tokens={
        BOB: {"id": "bob", "roles": ["ops"]}, CAROL: {"id": "carol", "roles": []},
    }, limits=LIMITS, poll_interval=0.02) as s:
        yield s, store
    await agent.checkpointer.close()


async def _prepare(s: Server) -> None:
    for tid, msg in (("sql", "sql DELETE FROM t"), ("q", "pick"), ("lim", "limit 4")):
        r = await s.client.post("/api/threads", params={"wait": "true"}, headers=bearer(CAROL),
                                json={"message": msg, "thread_id": tid})
        assert r.json()["status"] == "interrupted", r.text


@pytest.mark.anyio
async def test_oversize_requests_store_nothing(server: tuple[Server, Path]) -> None:
    s, store = server
    await _prepare(s)
    c = s.client
    big = "x" * 3000
    attempts: list[tuple[str, str, dict[str, Any] | bytes, int, str]] = [
        # body over max_body_bytes (a 50 MB message would be refused the same way, unread)
        ("/api/threads", CAROL, {"message": "y" * 40_000}, 413, "max_body_bytes"),
        ("/api/threads/sql/decisions", BOB,
         {"decisions": [{"type": "reject", "message": "z" * 40_000}]}, 413, "max_body_bytes"),
        # fields over their own limits
        ("/api/threads", CAROL, {"message": big, "thread_id": "new"}, 422, "max_message_chars"),
        ("/api/threads/sql/messages", CAROL, {"message": big}, 422, "max_message_chars"),
        ("/api/threads/sql/decisions", BOB,
         {"decisions": [{"type": "reject", "message": big}]}, 422, "max_message_chars"),
        ("/api/threads/lim/decisions", BOB,
         {"decisions": {"call_1_0": {"type": "edit", "edited_action": {
             "name": "set_limit", "args": {"n": 2, "reason": big}}}}}, 422, "max_args_bytes"),
        ("/api/threads/q/answer", CAROL, {"value": ["colour"] * 100}, 422, "max_answer_bytes"),
        ("/api/threads/sql/cancel", CAROL, {"reason": big}, 422, "max_message_chars"),
    ]
    for _ in range(3):  # let the watcher settle; it only reads
        await s.agent.alist_threads()
    before = files(store)
    for path, token, body, status, limit in attempts:
        r = await c.post(path, headers=bearer(token), json=body)
        assert r.status_code == status, (path, r.text)
        assert limit in r.json()["message"], r.text
        assert "Nothing was stored" in r.json()["message"] or status == 413
    # a chunked body without Content-Length is counted as it arrives
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"message": "'
        for _ in range(10):
            yield b"w" * 8192
        yield b'"}'
    r = await c.post("/api/threads", headers=bearer(CAROL), content=chunks())
    assert r.status_code == 413 and r.json()["error"] == "PayloadTooLarge"
    assert files(store) == before
    assert EXECUTED == []
    assert sorted(t.thread_id for t in await s.agent.alist_threads()) == ["lim", "q", "sql"]
    # within the limits the same requests work
    r = await c.post("/api/threads/sql/decisions", params={"wait": "true"}, headers=bearer(BOB),
                     json={"decisions": [{"type": "reject", "message": "z" * 1999}]})
    assert r.status_code == 200, r.text


def test_limits_are_validated() -> None:
    from interlock import ConfigurationError

    with pytest.raises(ConfigurationError, match="max_body_bytes"):
        Limits(max_body_bytes=0)
    assert Limits().max_body_bytes == 1024 * 1024


@pytest.mark.anyio
async def test_a_single_decision_object_is_held_to_the_same_limits(tmp_path: Path) -> None:
    """A decision sent as one object (not a list or mapping), on /api and on the LangGraph
    API, bare or in LangChain's {"decisions": ...}: the same 422, and nothing stored."""
    store = tmp_path / "store"
    store.mkdir()
    agent = make_agent(SqliteCheckpointer(store / "i.db"))
    async with running(agent, tokens={BOB: {"id": "bob", "roles": ["ops"]},
                                      CAROL: {"id": "carol", "roles": []}},
                       limits=LIMITS, poll_interval=0.02, langgraph_api=True) as s:
        await _prepare(s)
        c = s.client
        big = "x" * 3000
        reject = {"type": "reject", "message": big}
        edit = {"type": "edit", "edited_action": {"name": "set_limit",
                                                  "args": {"n": 2, "reason": big}}}
        iid = (await s.agent.aget_thread("sql")).interrupts[0].id  # the whole request
        attempts: list[tuple[str, dict[str, Any], str]] = [
            ("/api/threads/sql/decisions", {"decisions": reject}, "max_message_chars"),
            ("/api/threads/sql/decisions", {"decisions": {"decisions": reject}},
             "max_message_chars"),
            ("/api/threads/lim/decisions", {"decisions": edit}, "max_args_bytes"),
            ("/langgraph/threads/sql/runs/wait",
             {"assistant_id": "agent", "command": {"resume": reject}}, "max_message_chars"),
            ("/langgraph/threads/sql/runs/wait",
             {"assistant_id": "agent", "command": {"resume": {iid: reject}}},
             "max_message_chars"),
            ("/langgraph/threads/sql/runs/wait",
             {"assistant_id": "agent", "command": {"resume": {iid: {"decisions": [reject]}}}},
             "max_message_chars"),
        ]
        for _ in range(3):  # let the watcher settle; it only reads
            await s.agent.alist_threads()
        before = files(store)
        for path, body, limit in attempts:
            headers = {**bearer(BOB), "x-api-key": BOB}
            r = await c.post(path, headers=headers, json=body)
            assert r.status_code == 422, (path, body.keys(), r.status_code, r.text[:300])
            assert limit in r.text, (path, str(body)[:200], r.text[:300])
        assert files(store) == before
        assert EXECUTED == []
        # the same shape within the limits decides
        r = await c.post("/api/threads/sql/decisions", params={"wait": "true"},
                         headers=bearer(BOB),
                         json={"decisions": {"type": "reject", "message": "no"}})
        assert r.status_code == 200 and r.json()["status"] == "completed", r.text
    await agent.checkpointer.close()


@pytest.mark.anyio
async def test_langgraph_metadata_is_bounded_and_a_refused_run_keeps_nothing(
        tmp_path: Path) -> None:
    """Metadata of a LangGraph thread or run is kept in the server's memory (the run registry,
    threads created and not run yet): bounded in bytes and in how many keys and values it
    holds (70,000 one-byte keys fit in a 1 MiB body and cost over 10 MB each). A run refused
    before its input was stored (409: the thread waits for a decision) is not kept."""
    agent = make_agent(SqliteCheckpointer(tmp_path / "i.db"))
    async with running(agent, tokens={CAROL: {"id": "carol", "roles": []}},
                       langgraph_api=True) as s:
        c, h = s.client, bearer(CAROL)
        many = {f"k{i}": i for i in range(300)}  # 3 KiB: under the bytes, over the count
        r = await c.post("/langgraph/threads", headers=h, json={"metadata": many})
        assert r.status_code == 422 and "max_metadata_values" in r.json()["message"], r.text
        deep: Any = 1
        for _ in range(300):
            deep = {"a": deep}
        r = await c.post("/langgraph/threads", headers=h, json={"metadata": deep})
        assert r.status_code == 422 and "max_metadata_values" in r.json()["message"], r.text
        r = await c.post("/langgraph/threads", headers=h,
                         json={"metadata": {"note": "x" * 20_000}})
        assert r.status_code == 422 and "max_metadata_bytes" in r.json()["message"], r.text
        r = await c.post("/langgraph/threads", headers=h, json={"metadata": {"team": "ops"}})
        assert r.status_code == 200, r.text
        tid = r.json()["thread_id"]
        run = {"assistant_id": "agent", "input": {"messages": [{"role": "user",
                                                                "content": "sql DELETE"}]}}
        r = await c.post(f"/langgraph/threads/{tid}/runs/wait", headers=h, json=run)
        assert r.status_code == 200 and "__interrupt__" in r.json(), r.text
        for body in ({**run, "metadata": many}, {**run, "metadata": {"n": "x" * 20_000}}):
            r = await c.post(f"/langgraph/threads/{tid}/runs", headers=h, json=body)
            assert r.status_code == 422, r.text
        for _ in range(3):  # refused: the thread waits for a decision
            r = await c.post(f"/langgraph/threads/{tid}/runs", headers=h,
                             json={**run, "metadata": {"try": 1}})
            assert r.status_code == 409 and r.json()["error"] == "ThreadInterrupted", r.text
        runs = (await c.get(f"/langgraph/threads/{tid}/runs", headers=h)).json()
        assert len(runs) == 1 and all("try" not in r["metadata"] for r in runs), runs


@pytest.mark.anyio
async def test_deeply_nested_input_is_refused_with_a_422_and_stores_nothing(
        server: tuple[Server, Path]) -> None:
    """Values nested far deeper than any real decision or answer (500 levels, 1 KB: under
    every size limit) are refused as input (422 InvalidText, the level limit named), not
    failed on when stored (a 500 with a serialiser's error), on the decision's metadata and
    on an answer alike; the thread is unchanged and usable."""
    s, store = server
    await _prepare(s)
    c = s.client
    nested = "[" * 500 + "]" * 500
    answer = "[" * 200 + "]" * 200  # under this module's max_answer_bytes (500)
    for _ in range(3):
        await s.agent.alist_threads()
    before = files(store)
    for path, token, body in (
            ("/api/threads/sql/decisions", BOB,
             '{"decisions": [{"type": "approve", "metadata": {"a": ' + nested + '}}]}'),
            ("/api/threads/q/answer", CAROL, '{"value": ' + answer + '}')):
        r = await c.post(path, headers={**bearer(token), "Content-Type": "application/json"},
                         content=body)
        assert r.status_code == 422, (path, r.status_code, r.text)
        assert r.json()["error"] == "InvalidText", r.text
        assert "nested more than 100 levels" in r.json()["message"], r.text
    assert files(store) == before
    r = await c.post("/api/threads/sql/decisions", headers=bearer(BOB), params={"wait": "true"},
                     json={"decisions": [{"type": "reject"}]})
    assert r.status_code == 200 and r.json()["status"] == "completed", r.text
