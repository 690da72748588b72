"""Threads belong to whoever created them: a foreign token cannot read them (thread, list,
audit, event streams) nor post into them, and so cannot ride their remembered approvals.
Every message post, run start and auto-approval names who caused it."""

from __future__ import annotations

from typing import Any

import pytest

from interlock import Agent, NotAuthorized, Reviewer
from interlock.authz import facts_of, may_read
from interlock.storage.base import search_text
from interlock.storage.memory import MemoryCheckpointer
from server.conftest import ADMIN, ALICE, BOB, CAROL, TOKENS, Server, bearer, running, sse
from server.server_agents import EXECUTED, make_agent


async def post(s: Server, path: str, token: str, body: dict[str, Any]) -> Any:
    return await s.client.post(path, params={"wait": "true"}, headers=bearer(token), json=body)


@pytest.mark.anyio
async def test_a_foreign_token_cannot_read_or_post(agent: Agent) -> None:
    async with running(agent, tokens=TOKENS) as s:
        c = s.client
        r = await post(s, "/api/threads", CAROL, {"message": "twice SELECT 1", "thread_id": "c1"})
        assert r.json()["status"] == "interrupted"
        # carol approves and remembers: later execute_sql calls of her thread run unasked
        r = await post(s, "/api/threads/c1/decisions", CAROL,
                       {"decisions": [{"type": "approve", "remember": "thread"}]})
        assert r.json()["status"] == "completed"
        ran = list(EXECUTED)
        state = await agent.aget_thread("c1")
        rows = await agent.aaudit("c1")

        # bob: nothing of carol's thread is visible, nothing can be added
        for path in ("/api/threads/c1", "/api/threads/c1/audit", "/api/threads/c1/remembered",
                     "/api/threads/c1/events"):
            r = await c.get(path, headers=bearer(BOB))
            assert r.status_code == 403, (path, r.text)
            assert r.json()["error"] == "NotAuthorized"
        r = await post(s, "/api/threads/c1/messages", BOB, {"message": "twice DROP TABLE x"})
        assert r.status_code == 403 and r.json()["error"] == "NotAuthorized"
        r = await post(s, "/api/threads", BOB, {"message": "twice DROP TABLE x", "thread_id": "c1"})
        assert r.status_code == 403
        listed = (await c.get("/api/threads", headers=bearer(BOB))).json()["threads"]
        assert "c1" not in [t["thread_id"] for t in listed]
        audit = (await c.get("/api/audit", headers=bearer(BOB))).json()["records"]
        assert all(a["thread_id"] != "c1" for a in audit)
        r = await c.get("/api/audit", params={"thread_id": "c1"}, headers=bearer(BOB))
        assert r.status_code == 403
        assert ran == EXECUTED  # the remembered approval was not ridden
        after = await agent.aget_thread("c1")
        assert (after.version, len(after.messages)) == (state.version, len(state.messages))
        assert await agent.aaudit("c1") == rows

        # the creator and an admin may read and post
        assert (await c.get("/api/threads/c1", headers=bearer(CAROL))).status_code == 200
        assert (await c.get("/api/threads/c1", headers=bearer(ADMIN))).status_code == 200
        r = await post(s, "/api/threads/c1/messages", CAROL, {"message": "twice SELECT 2"})
        assert r.json()["status"] == "completed"  # remembered for carol's own run
        assert EXECUTED[len(ran):] == [("execute_sql", {"query": "SELECT 2"}),
                                       ("execute_sql", {"query": "SELECT 2 -- again"})]

        kinds = [(a.kind, a.actor, a.data.get("caused_by")) for a in await agent.aaudit("c1")]
        assert ("message_posted", "carol", None) in kinds
        assert ("run_started", "carol", None) in kinds
        auto = [k for k in kinds if k[0] == "auto_approved"]
        assert auto and all(k[2] == "carol" for k in auto)


@pytest.mark.anyio
async def test_a_reviewer_reads_what_they_may_decide_and_what_they_decided(
        agent: Agent) -> None:
    async with running(agent, tokens=TOKENS) as s:
        c = s.client
        await post(s, "/api/threads", BOB, {"message": "drop users", "thread_id": "d1"})
        # the request needs a dba: alice may read it, carol may not
        assert (await c.get("/api/threads/d1", headers=bearer(ALICE))).status_code == 200
        assert (await c.get("/api/threads/d1", headers=bearer(CAROL))).status_code == 403
        inbox = (await c.get("/api/threads", params={"status": "interrupted"},
                             headers=bearer(ALICE))).json()["threads"]
        assert [t["thread_id"] for t in inbox] == ["d1"]
        r = await post(s, "/api/threads/d1/decisions", ALICE,
                       {"decisions": [{"type": "reject", "message": "no"}]})
        assert r.status_code == 200
        # decided: alice keeps reading it; it is no longer carol's business either way
        assert (await c.get("/api/threads/d1", headers=bearer(ALICE))).status_code == 200
        assert (await c.get("/api/threads/d1/audit", headers=bearer(ALICE))).status_code == 200
        assert (await c.get("/api/threads/d1", headers=bearer(CAROL))).status_code == 403
        assert EXECUTED == []


@pytest.mark.anyio
async def test_event_streams_carry_only_readable_threads(agent: Agent) -> None:
    async with running(agent, tokens=TOKENS) as s:
        async with sse(s.app, "/api/inbox/events", bearer(BOB)) as bob_inbox, \
                sse(s.app, "/api/inbox/events", bearer(CAROL)) as carol_inbox:
            assert bob_inbox.status == carol_inbox.status == 200
            # a request only a dba may decide: bob (ops) may not see it, its creator may
            await post(s, "/api/threads", CAROL, {"message": "drop salaries",
                                                  "thread_id": "private"})
            ev = await carol_inbox.until(lambda e: e["event"] == "request_raised")
            assert ev["data"]["thread"]["thread_id"] == "private"
            # a marker: bob's own thread, changed after the request was raised; the inbox
            # streams changes in the order they were stored, so anything of "private" bob
            # was sent came before it
            await post(s, "/api/threads", BOB, {"message": "hello", "thread_id": "mine"})
            await bob_inbox.until(lambda e: e["data"].get("thread", {}).get("thread_id")
                                  == "mine")
            while not bob_inbox.events.empty():
                bob_inbox.seen.append(bob_inbox.events.get_nowait())
            seen = [e["data"].get("thread", {}).get("thread_id") for e in bob_inbox.seen]
            assert "private" not in seen and "mine" in seen
        async with sse(s.app, "/api/threads/private/events", bearer(BOB)) as foreign:
            assert foreign.status == 403


def test_library_posting_and_reading_are_checked() -> None:
    agent: Agent = make_agent(MemoryCheckpointer())
    alice = Reviewer("alice", frozenset({"ops"}))
    mallory = Reviewer("mallory")
    agent.invoke("twice SELECT 1", thread_id="a1", reviewer=alice)
    agent.resume("a1", [{"type": "approve", "remember": "thread"}], reviewer=alice)
    ran = list(EXECUTED)
    with pytest.raises(NotAuthorized, match="only its creator"):
        agent.invoke("twice DELETE FROM orders", thread_id="a1", reviewer=mallory)
    with pytest.raises(NotAuthorized, match="may not read"):
        agent.get_thread("a1", reviewer=mallory)
    assert agent.list_threads(reviewer=mallory) == []
    assert agent.audit(reviewer=mallory) == []
    assert ran == EXECUTED
    assert [t.thread_id for t in agent.list_threads(reviewer=alice)] == ["a1"]
    assert agent.get_thread("a1").messages  # the application itself reads everything


@pytest.mark.anyio
async def test_a_reviewer_pages_through_exactly_the_threads_it_may_read(agent: Agent) -> None:
    """The list, read from the store's readers index, pages (two rows at a time, with and
    without a status or text filter) through exactly the threads ``authz.may_read`` allows
    each token, in listing order; a thread a reviewer decided stays in its list."""
    async with running(agent, tokens=TOKENS) as s:
        c = s.client
        for i, (token, message) in enumerate([
                (CAROL, "drop salaries"), (BOB, "drop logs"), (CAROL, "hello"),
                (ALICE, "sql SELECT 1"), (CAROL, "drop users"), (BOB, "hello"),
                (CAROL, "drop orders"), (ALICE, "sql SELECT 2"), (BOB, "drop carts")]):
            r = await post(s, "/api/threads", token, {"message": message,
                                                      "thread_id": f"t{i}"})
            assert r.status_code == 200, r.text  # waited for
        r = await post(s, "/api/threads/t4/decisions", ALICE,
                       {"decisions": [{"type": "reject", "message": "no"}]})
        assert r.status_code == 200
        everything = await agent.alist_threads(limit=100)
        assert len(everything) == 9
        for token in (ALICE, BOB, CAROL):
            who = TOKENS[token]
            rv = Reviewer(str(who["id"]), frozenset(who["roles"]))
            for params in ({}, {"status": "interrupted"}, {"q": "DROP"}):
                want = [t.thread_id for t in everything if may_read(rv, facts_of(t))
                        and params.get("status") in (None, t.status)
                        and str(params.get("q", "")).lower() in search_text(t)]
                got: list[str] = []
                page: dict[str, Any] = {**params, "limit": 2}
                while True:
                    body = (await c.get("/api/threads", params=page,
                                        headers=bearer(token))).json()
                    got += [t["thread_id"] for t in body["threads"]]
                    if body["next_before"] is None:
                        break
                    page = {**params, "limit": 2, "before": body["next_before"],
                            "before_id": body["next_before_id"]}
                assert got == want, (who["id"], params)
                assert want, (who["id"], params)  # every reviewer sees something
        # bob (ops) never sees carol's dba-only requests; alice keeps the one she decided
        bob = Reviewer("bob", frozenset({"ops"}))
        listed = [t.thread_id for t in await agent.alist_threads(reviewer=bob, limit=100)]
        assert "t0" not in listed and "t4" not in listed and "t3" in listed
        alice = Reviewer("alice", frozenset({"dba", "ops"}))
        assert "t4" in [t.thread_id for t in await agent.alist_threads(reviewer=alice)]
