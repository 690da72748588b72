"""The revision attacks over HTTP: the review API (``/api``) and the LangGraph API
(``/langgraph``), in process. An edit into a stricter tool does not run on the editor's
approval, a reviewer without the stricter tool's role is refused, and an approval made for the
call before a colleague's edit is refused with 409, nothing stored.

Also when the approval is one of many: the inbox's "approve several" (one decision per thread,
each naming the revision the list showed, sent over ``/api``), a decision for every call of a
thread at once, and a per-turn LangGraph answer for a whole review request. A call a colleague
edited after the reviewer loaded it is refused (409 ``StaleRevision``), nothing of the refused
decision is stored and nothing runs on it; the calls that were not edited are decided as
shown."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from interlock import Agent
from server.conftest import StoreFactory, bearer, running

from .revision_agent import executions, make_agent, proposal

pytestmark = pytest.mark.anyio

TOKENS = {f"{name}-token-0123456789abcdef": {"id": name, "roles": roles} for name, roles in [
    ("alice", ["dba"]), ("bob", ["dba"]), ("carol", ["dba"]), ("frank", ["finance"]),
    ("gina", ["finance"]), ("hal", ["dba", "finance"]), ("olga", ["oncall"])]}


def as_(name: str) -> dict[str, str]:
    return bearer(f"{name}-token-0123456789abcdef")


@pytest.fixture(autouse=True)
def _runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))


@pytest.fixture
def agent(store_factory: StoreFactory) -> Agent:
    return make_agent(store_factory())


async def post(c: httpx.AsyncClient, who: str, path: str, body: Any) -> httpx.Response:
    return await c.post(path, params={"wait": "true"}, json=body, headers=as_(who))


async def decide(c: httpx.AsyncClient, who: str, tid: str, decision: dict[str, Any],
                 ) -> httpx.Response:
    return await post(c, who, f"/api/threads/{tid}/decisions", {"decisions": [decision]})


def edit(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "edit", "edited_action": {"name": name, "args": args}}


async def test_api_edit_into_a_stricter_tool_needs_that_tools_quorum(agent: Agent) -> None:
    async with running(agent, tokens=TOKENS) as s:
        c = s.client
        r = await post(c, "alice", "/api/threads",
                       {"thread_id": "t", "message": proposal("lookup", table="customers")})
        assert r.json()["status"] == "interrupted"
        r = await decide(c, "alice", "t", edit("drop_table", table="customers"))
        assert r.status_code == 200 and r.json()["status"] == "interrupted", r.text
        assert executions() == []
        (config,) = r.json()["interrupts"][0]["value"]["review_configs"]
        assert (config["revision"], config["reviewers"], config["approvals"]) == (2, ["dba"], 2)
        r = await decide(c, "frank", "t", {"type": "approve", "revision": 2})
        assert r.status_code == 403 and "dba" in r.json()["message"]
        r = await decide(c, "alice", "t", {"type": "approve", "revision": 2})
        assert r.status_code == 403
        assert (await decide(c, "bob", "t", {"type": "approve", "revision": 2})).json()[
            "status"] == "interrupted"
        assert executions() == []
        r = await decide(c, "carol", "t", {"type": "approve", "revision": 2})
        assert r.json()["status"] == "completed", r.text
    assert executions() == ["drop_table customers"]


async def test_api_stale_approval_after_an_edit_is_a_409(agent: Agent) -> None:
    async with running(agent, tokens=TOKENS) as s:
        c = s.client
        await post(c, "hal", "/api/threads",
                   {"thread_id": "t", "message": proposal("pay", account="acme", amount=100)})
        assert (await decide(c, "frank", "t", {"type": "approve"})).status_code == 200
        r = await decide(c, "gina", "t", edit("pay", account="offshore-9", amount=90000))
        assert r.status_code == 200 and r.json()["status"] == "interrupted"
        rows = len(await agent.aaudit("t"))
        for stale in ({"type": "approve"}, {"type": "approve", "revision": 1}):
            r = await decide(c, "frank", "t", stale)
            assert r.status_code == 409, r.text
            assert r.json()["error"] == "StaleRevision"
            assert "'gina' edited the call" in r.json()["message"]
        assert len(await agent.aaudit("t")) == rows and executions() == []
        r = await decide(c, "frank", "t", {"type": "approve", "revision": 2})
        assert r.json()["status"] == "completed", r.text
    assert executions() == ["pay offshore-9 90000"]
    (row,) = [a for a in await agent.aaudit("t") if a.kind == "decision"]
    assert (row.actor, row.data["revision"]) == ("frank", 2)


async def test_api_an_escalated_reviewers_edit_and_remember_count_for_nothing_more(
        store_factory: StoreFactory) -> None:
    """Over /api, olga (oncall) decides requests escalated to her. Her edit of deploy (two
    dba approvals) makes revision 2 with no approval counted, which she may not approve; two
    dbas run it once. Her 'approve and remember' of prod_sql is a 403 that changes nothing;
    her plain approval runs it, and the thread's next prod_sql call waits for a dba."""
    now = [datetime(2030, 1, 1, 9, 0, tzinfo=UTC)]
    agent = make_agent(store_factory(), clock=lambda: now[0])
    async with running(agent, tokens=TOKENS) as s:
        c = s.client
        for tid, message in (("d", proposal("deploy", service="web")),
                             ("q", proposal("prod_sql", query="select 1"))):
            r = await post(c, "alice", "/api/threads", {"thread_id": tid, "message": message})
            assert r.json()["status"] == "interrupted", r.text
        assert (await decide(c, "olga", "d", {"type": "approve"})).status_code == 403
        now[0] += timedelta(minutes=31)
        await agent.aexpire_due()
        r = await decide(c, "olga", "d", edit("deploy", service="billing"))
        assert r.status_code == 200 and r.json()["status"] == "interrupted", r.text
        (config,) = r.json()["interrupts"][0]["value"]["review_configs"]
        assert (config["revision"], config["reviewers"], config.get("approved_by")) == (
            2, ["dba"], None)
        assert (await decide(c, "olga", "d", {"type": "approve", "revision": 2})
                ).status_code == 403
        r = await decide(c, "alice", "d", {"type": "approve", "revision": 2})
        assert r.json()["status"] == "interrupted" and executions() == []
        r = await decide(c, "bob", "d", {"type": "approve", "revision": 2})
        assert r.json()["status"] == "completed", r.text
        assert executions() == ["deploy billing"]

        rows = len(await agent.aaudit("q"))
        r = await decide(c, "olga", "q", {"type": "approve", "remember": "thread"})
        assert r.status_code == 403 and "not remember" in r.json()["message"], r.text
        assert len(await agent.aaudit("q")) == rows and executions() == ["deploy billing"]
        r = await decide(c, "olga", "q", {"type": "approve"})
        assert r.json()["status"] == "completed", r.text
        r = await post(c, "alice", "/api/threads/q/messages",
                       {"message": proposal("prod_sql", query="drop table customers")})
        assert r.json()["status"] == "interrupted", r.text
    assert executions() == ["deploy billing", "prod_sql select 1"]


async def test_langgraph_resumes_are_bound_to_the_revision_they_were_shown(
        agent: Agent) -> None:
    async with running(agent, tokens=TOKENS, langgraph_api=True) as s:
        c = s.client
        r = await c.post("/langgraph/threads", json={}, headers=as_("hal"))
        tid = r.json()["thread_id"]
        runs = f"/langgraph/threads/{tid}/runs/wait"

        async def resume(who: str, value: Any) -> httpx.Response:
            return await c.post(runs, headers=as_(who), json={
                "assistant_id": "agent", "command": {"resume": value}})

        r = await c.post(runs, headers=as_("hal"), json={
            "assistant_id": "agent", "input": {"messages": [
                {"role": "user", "content": proposal("pay", account="acme", amount=100)}]}})
        (shown,) = r.json()["__interrupt__"]
        assert shown["value"]["review_configs"][0]["revision"] == 1
        first = shown["id"]
        r = await resume("frank", {first: {"type": "accept", "args": None}})
        assert r.status_code == 200, r.text
        r = await resume("gina", {first: {"type": "edit", "args": {
            "action": "pay", "args": {"account": "offshore-9", "amount": 90000}}}})
        assert r.status_code == 200, r.text
        (now,) = r.json()["__interrupt__"]
        assert now["id"] != first and now["value"]["review_configs"][0]["revision"] == 2
        r = await c.get(f"/langgraph/agent-inbox/threads/{tid}/state", headers=as_("frank"))
        (inbox,) = r.json()["interrupts"]
        assert inbox["id"] == now["id"]
        assert "Revision 2 of this call, edited by ` gina `" in inbox["value"]["description"]
        rows = len(await agent.aaudit(tid))
        r = await resume("frank", {first: {"type": "accept", "args": None}})
        assert r.status_code == 409 and r.json()["error"] == "StaleInterrupt", r.text
        for unkeyed in ({"decisions": [{"type": "approve"}]}, {"type": "approve"},
                        [{"type": "accept", "args": None}]):
            r = await resume("frank", unkeyed)
            assert r.status_code == 409 and r.json()["error"] == "StaleRevision", r.text
        assert len(await agent.aaudit(tid)) == rows and executions() == []
        r = await resume("frank", {now["id"]: {"type": "accept", "args": None}})
        assert r.status_code == 200 and "__interrupt__" not in r.json(), r.text
    assert executions() == ["pay offshore-9 90000"]


async def test_langgraph_a_keyed_response_naming_the_other_call_is_refused(
        agent: Agent) -> None:
    """Keyed by interrupt id, each response is for the call shown under that id. One that
    names the other call's tool_call_id ("approve the second, reject the first", under the
    wrong keys) is a 422 that stores nothing and runs nothing; it is never applied to the
    call of its key."""
    async with running(agent, tokens=TOKENS, langgraph_api=True) as s:
        c = s.client
        r = await c.post("/langgraph/threads", json={}, headers=as_("hal"))
        tid = r.json()["thread_id"]
        runs = f"/langgraph/threads/{tid}/runs/wait"
        message = json.dumps([{"name": "lookup", "args": {"table": "a"}},
                              {"name": "lookup", "args": {"table": "b"}}])
        r = await c.post(runs, headers=as_("hal"), json={
            "assistant_id": "agent", "input": {"messages": [{"role": "user",
                                                             "content": message}]}})
        shown = [(i["id"], i["value"]["action_requests"][0]["tool_call_id"])
                 for i in r.json()["__interrupt__"]]
        assert len(shown) == 2, r.text
        (id_a, call_a), (id_b, call_b) = shown
        rows = len(await agent.aaudit(tid))
        for crossed in ({id_a: {"type": "approve", "tool_call_id": call_b},
                         id_b: {"type": "reject", "tool_call_id": call_a, "message": "no"}},
                        {id_a: {"type": "approve", "tool_call_id": call_b}}):
            r = await c.post(runs, headers=as_("hal"), json={
                "assistant_id": "agent", "command": {"resume": crossed}})
            assert r.status_code == 422 and r.json()["error"] == "InvalidDecision", r.text
            assert f"names tool_call_id {call_b!r}" in r.json()["message"]
        assert len(await agent.aaudit(tid)) == rows and executions() == []
        r = await c.post(runs, headers=as_("hal"), json={
            "assistant_id": "agent", "command": {"resume": {
                id_a: {"type": "reject", "tool_call_id": call_a, "message": "no"},
                id_b: {"type": "approve", "tool_call_id": call_b}}}})
        assert r.status_code == 200 and "__interrupt__" not in r.json(), r.text
    assert executions() == ["lookup b"]


async def start(c: httpx.AsyncClient, tid: str, calls: list[tuple[str, dict[str, Any]]],
                ) -> None:
    """hal asks for ``calls`` (one turn) on thread ``tid``; the run waits for review."""
    message = json.dumps([{"name": n, "args": a} for n, a in calls]) if len(calls) > 1 \
        else proposal(calls[0][0], **calls[0][1])
    r = await c.post("/api/threads", params={"wait": "true"}, headers=as_("hal"),
                     json={"thread_id": tid, "message": message})
    assert r.json()["status"] == "interrupted", r.text


async def shown(c: httpx.AsyncClient, who: str, tid: str) -> tuple[str, list[dict[str, Any]]]:
    """What ``who``'s page loaded for ``tid``: the review request's id and, per call, its
    tool_call_id, arguments and revision."""
    r = await c.get(f"/api/threads/{tid}", headers=as_(who))
    (intr,) = r.json()["interrupts"]
    value = intr["value"]
    return intr["id"], [
        {"id": a["tool_call_id"], "args": a["args"], "revision": cfg.get("revision", 1)}
        for a, cfg in zip(value["action_requests"], value["review_configs"], strict=True)]


async def edit_call(c: httpx.AsyncClient, who: str, tid: str, call_id: str, name: str,
                    **args: Any) -> None:
    r = await c.post(f"/api/threads/{tid}/decisions", params={"wait": "true"},
                     headers=as_(who), json={"decisions": {call_id: {
                         "type": "edit", "edited_action": {"name": name, "args": args}}}})
    assert r.status_code == 200 and r.json()["status"] == "interrupted", r.text


async def stored(agent: Agent, tid: str) -> tuple[Any, ...]:
    """What a refused decision must leave unchanged: the audit rows and what waits."""
    t = await agent.aget_thread(tid)
    return (len(await agent.aaudit(tid)), t.status,
            [i.value.model_dump() for i in t.interrupts])


async def test_approving_several_refuses_the_one_edited_after_the_list_was_loaded(
        agent: Agent) -> None:
    """The inbox's batch: alice's list shows three `note` calls (one approval each, not by
    the requester or an editor: an edit leaves the call waiting); bob edits the second after
    the list loaded; alice's approvals, one per thread with the revision the list showed, run
    the first and third, and the second is refused without a trace."""
    async with running(agent, tokens=TOKENS) as s:
        c = s.client
        for n in range(3):
            await start(c, f"b{n}", [("note", {"text": f"n{n}"})])
        page = {f"b{n}": await shown(c, "alice", f"b{n}") for n in range(3)}
        assert all(calls[0]["revision"] == 1 for _, calls in page.values())
        await edit_call(c, "bob", "b1", page["b1"][1][0]["id"], "note", text="rewritten by bob")
        before = await stored(agent, "b1")
        answers = {}
        for tid, (intr_id, (call,)) in page.items():  # what batch.js sends, row by row
            answers[tid] = await c.post(
                f"/api/threads/{tid}/decisions", params={"wait": "true"}, headers=as_("alice"),
                json={"interrupt_id": intr_id, "decisions": {
                    call["id"]: {"type": "approve", "revision": call["revision"]}}})
        assert answers["b0"].json()["status"] == "completed", answers["b0"].text
        assert answers["b2"].json()["status"] == "completed", answers["b2"].text
        assert answers["b1"].status_code == 409, answers["b1"].text
        assert answers["b1"].json()["error"] == "StaleRevision"
        assert "'bob' edited the call" in answers["b1"].json()["message"]
        assert await stored(agent, "b1") == before  # nothing of alice's approval is kept
        assert sorted(executions()) == ["note n0", "note n2"]  # nothing ran on b1
        # the edited call waits at revision 2; approved as shown, the edit is what runs
        _, (now,) = await shown(c, "alice", "b1")
        assert (now["args"], now["revision"]) == ({"text": "rewritten by bob"}, 2)
        r = await c.post("/api/threads/b1/decisions", params={"wait": "true"},
                         headers=as_("alice"), json={"decisions": {
                             now["id"]: {"type": "approve", "revision": 2}}})
        assert r.json()["status"] == "completed", r.text
    assert sorted(executions()) == ["note n0", "note n2", "note rewritten by bob"]
    (row,) = [a for a in await agent.aaudit("b1") if a.kind == "decision"]
    assert (row.actor, row.data["revision"]) == ("alice", 2)


async def test_deciding_every_call_of_a_thread_at_once_is_refused_when_one_was_edited(
        agent: Agent) -> None:
    """One turn with two `note` calls; bob edits the second after alice loaded the thread.
    Alice's decision for both calls (revision 1 each) is refused as a whole: neither call
    runs, nothing is stored; the first call still waits at revision 1, the second at 2."""
    async with running(agent, tokens=TOKENS) as s:
        c = s.client
        await start(c, "m", [("note", {"text": "first"}), ("note", {"text": "second"})])
        intr_id, calls = await shown(c, "alice", "m")
        await edit_call(c, "bob", "m", calls[1]["id"], "note", text="second, edited")
        before = await stored(agent, "m")
        r = await c.post("/api/threads/m/decisions", params={"wait": "true"},
                         headers=as_("alice"), json={"interrupt_id": intr_id, "decisions": {
                             call["id"]: {"type": "approve", "revision": call["revision"]}
                             for call in calls}})
        assert r.status_code == 409 and r.json()["error"] == "StaleRevision", r.text
        assert await stored(agent, "m") == before and executions() == []
        _, now = await shown(c, "alice", "m")
        assert [(x["args"]["text"], x["revision"]) for x in now] == [
            ("first", 1), ("second, edited", 2)]
        r = await c.post("/api/threads/m/decisions", params={"wait": "true"},
                         headers=as_("alice"), json={"interrupt_id": intr_id, "decisions": {
                             x["id"]: {"type": "approve", "revision": x["revision"]}
                             for x in now}})
        assert r.json()["status"] == "completed", r.text
    assert executions() == ["note first", "note second, edited"]


async def test_a_per_turn_answer_for_the_whole_request_after_an_edit_is_refused(
        agent: Agent) -> None:
    """``/langgraph/per-turn`` shows one interrupt for the turn's calls, whose id stays the
    same when a call is edited, so an answer keyed by it names no revision: after bob's edit
    every such answer is refused (409 StaleRevision) and nothing runs; the call's own
    interrupt id of its new revision (``/langgraph``) decides it."""
    async with running(agent, tokens=TOKENS, langgraph_api=True) as s:
        c = s.client
        r = await c.post("/langgraph/per-turn/threads", json={}, headers=as_("hal"))
        tid = r.json()["thread_id"]

        async def run(who: str, body: dict[str, Any], route: str = "/per-turn",
                      ) -> httpx.Response:
            return await c.post(f"/langgraph{route}/threads/{tid}/runs/wait", headers=as_(who),
                                json={"assistant_id": "agent", **body})

        r = await run("hal", {"input": {"messages": [{"role": "user", "content": json.dumps(
            [{"name": "note", "args": {"text": "first"}},
             {"name": "note", "args": {"text": "second"}}])}]}})
        (turn,) = r.json()["__interrupt__"]
        assert [a["args"]["text"] for a in turn["value"]["action_requests"]] == [
            "first", "second"]
        (_, second) = [a["tool_call_id"] for a in turn["value"]["action_requests"]]
        await edit_call(c, "bob", tid, second, "note", text="second, edited")
        r = await c.get(f"/langgraph/per-turn/threads/{tid}/state", headers=as_("alice"))
        (again,) = r.json()["interrupts"]
        assert again["id"] == turn["id"]  # the request's id did not change
        before = await stored(agent, tid)
        for answer in ({"decisions": [{"type": "approve"}, {"type": "approve"}]},
                       {"decisions": [{"type": "approve", "revision": 1},
                                      {"type": "approve", "revision": 1}]},
                       {"decisions": [{"type": "accept", "args": None},
                                      {"type": "accept", "args": None}]}):
            r = await run("alice", {"command": {"resume": {turn["id"]: answer}}})
            assert r.status_code == 409 and r.json()["error"] == "StaleRevision", r.text
        assert await stored(agent, tid) == before and executions() == []
        # each call keyed by the interrupt id of the revision shown on /langgraph
        r = await c.get(f"/langgraph/threads/{tid}/state", headers=as_("alice"))
        keyed = {i["id"]: {"type": "accept", "args": None} for i in r.json()["interrupts"]}
        assert len(keyed) == 2
        r = await run("alice", {"command": {"resume": keyed}}, route="")
        assert r.status_code == 200 and "__interrupt__" not in r.json(), r.text
    assert executions() == ["note first", "note second, edited"]
