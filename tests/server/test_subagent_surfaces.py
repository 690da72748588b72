"""Sub-agents on the HTTP API (issue 18, the surfaces): the inbox list shows one item per
parent thread (a sub-agent's thread is not a separate item), the request JSON carries the
path, the tool information of a sub-agent's call comes from that agent, decisions and answers
posted on the parent reach the children at any depth, a decision posted on a sub-agent's
thread is a 409 naming the thread to use, the audit rows of both threads link to each other,
and in token mode only reviewers holding the child's roles see and decide its request."""

from __future__ import annotations

import pytest

from conftest import StoreFactory
from procs.subagent_team import Effects

from .conftest import ADMIN, ALICE, BOB, CAROL, TOKENS, bearer, running, sse
from .subagent_agents import make_lead

pytestmark = pytest.mark.anyio


def _by_tool(detail: dict) -> dict[str, dict]:  # type: ignore[type-arg]
    out = {}
    for i in detail["interrupts"]:
        name = i["value"]["action_requests"][0]["name"] if i["kind"] == "review" \
            else i["path"][-1]["tool_name"]
        out[name] = i
    return out


@pytest.mark.parametrize("backend", ["memory", "sqlite", "postgres"], indirect=True)
async def test_parent_shows_the_path_children_are_not_inbox_items(stores: StoreFactory) -> None:
    fx = Effects()
    lead = make_lead(stores(), fx)
    async with running(lead) as s:
        r = await s.client.post("/api/threads", params={"wait": "true"},
                                json={"message": "clean up", "thread_id": "t1"})
        assert r.status_code == 200, r.text
        # the inbox: one item, the parent, with both requests and their paths
        listing = (await s.client.get("/api/threads", params={
            "status": "interrupted", "count": "true"})).json()
        assert [t["thread_id"] for t in listing["threads"]] == ["t1"]
        assert listing["total"] == 1  # counted without the children, from the store
        r = await s.client.post("/api/threads", params={"wait": "true"},
                                json={"message": "paint it", "thread_id": "t2"})
        assert r.status_code == 200, r.text
        two = (await s.client.get("/api/threads", params={
            "status": "interrupted", "count": "true", "limit": "1"})).json()
        assert [t["thread_id"] for t in two["threads"]] == ["t2"] and two["total"] == 2
        page = (await s.client.get("/api/threads", params={
            "status": "interrupted", "limit": "1", "before": two["next_before"],
            "before_id": two["next_before_id"]})).json()
        assert [t["thread_id"] for t in page["threads"]] == ["t1"]
        calls = {c["name"]: c for p in listing["threads"][0]["pending"] for c in p["calls"]}
        assert set(calls) == {"delete_file", "drop_table"}
        assert [(p["agent"], p["tool_name"]) for p in calls["drop_table"]["path"]] == [
            ("lead", "dba"), ("dba", "drop_table")]
        # the children are listed on request, marked with their parent
        everything = (await s.client.get("/api/threads", params={
            "status": "interrupted", "subagents": "true", "count": "true"})).json()
        assert {t["thread_id"]: t["parent_thread_id"] for t in everything["threads"]} == {
            "t1": None, "t1@ask_researcher": "t1", "t1@ask_dba": "t1", "t2": None,
            "t2@ask_manager": "t2", "t2@ask_manager@call_1_0": "t2@ask_manager"}
        assert everything["total"] == 6
        # a search finds the parent by the child's tool name
        found = (await s.client.get("/api/threads", params={"q": "drop_table"})).json()
        assert [t["thread_id"] for t in found["threads"]] == ["t1"]

        detail = (await s.client.get("/api/threads/t1")).json()
        reqs = _by_tool(detail)
        action = reqs["delete_file"]["value"]["action_requests"][0]
        assert action["path"] == [
            {"thread_id": "t1", "agent": "lead", "tool_call_id": "ask_researcher",
             "tool_name": "researcher"},
            {"thread_id": "t1@ask_researcher", "agent": "researcher",
             "tool_call_id": action["tool_call_id"], "tool_name": "delete_file"}]
        assert reqs["delete_file"]["path"][-1] == {"thread_id": "t1@ask_researcher",
                                                   "agent": "researcher",
                                                   "tool_call_id": None, "tool_name": None}
        # the tools named by the requests are the children's
        assert detail["tools"]["drop_table"]["description"] == "Drop a database table."
        assert detail["tools"]["delete_file"]["args_schema"]["required"] == ["path"]
        assert detail["parent"] is None and detail["root_thread_id"] is None

        # a sub-agent's thread: read-only, linked to its parent
        child = (await s.client.get("/api/threads/t1@ask_dba")).json()
        assert child["parent"] == {"thread_id": "t1", "tool_call_id": "ask_dba",
                                   "tool_name": "dba", "agent": "lead"}
        assert child["root_thread_id"] == "t1" and child["may_post"] is False
        # deciding there is a 409 that says where to decide
        r = await s.client.post("/api/threads/t1@ask_dba/decisions", json={
            "interrupt_id": reqs["drop_table"]["id"], "decisions": [{"type": "approve"}]})
        assert r.status_code == 409, r.text
        body = r.json()
        assert body["error"] == "SubAgentThread"
        assert (body["parent_thread_id"], body["root_thread_id"]) == ("t1", "t1")
        assert "t1" in body["message"]
        r = await s.client.post("/api/threads/t1@ask_dba/cancel", json={})
        assert r.status_code == 409 and r.json()["error"] == "SubAgentThread"
        r = await s.client.post("/api/threads/t1@ask_dba/messages", json={"message": "hi"})
        assert r.status_code == 409 and r.json()["error"] == "SubAgentThread"
        assert fx.counts() == {}

        # decisions posted on the parent: the child's rules validate them
        r = await s.client.post("/api/threads/t1/decisions", params={"wait": "true"}, json={
            "interrupt_id": reqs["drop_table"]["id"],
            "decisions": [{"type": "respond", "message": "no"}]})
        assert r.status_code == 422, r.text
        edit = {"type": "edit", "edited_action": {"name": "drop_table", "args": {"name": "tmp"}}}
        r = await s.client.post("/api/threads/t1/decisions", params={"wait": "true"}, json={
            "interrupt_id": reqs["drop_table"]["id"], "decisions": [edit]})
        assert r.status_code == 200, r.text
        assert [i["id"] for i in r.json()["interrupts"]] == [reqs["delete_file"]["id"]]
        r = await s.client.post("/api/threads/t1/decisions", params={"wait": "true"}, json={
            "interrupt_id": reqs["delete_file"]["id"],
            "decisions": [{"type": "reject", "message": "keep it"}]})
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "completed"
        out = r.json()["output"]
        assert "dba=dba:" in out and "dropped tmp" in out and "keep it" in out
        assert fx.counts() == {"drop_table": 1}

        # the audit rows of both threads link to each other
        own = (await s.client.get("/api/threads/t1/audit")).json()["records"]
        routed = [a["data"] for a in own if a["kind"] == "decision_routed"]
        assert [(d["child_thread_id"], d["step"]["tool_name"]) for d in routed] == [
            ("t1@ask_dba", "dba"), ("t1@ask_researcher", "researcher")]
        both = (await s.client.get("/api/threads/t1/audit",
                                   params={"subagents": "true"})).json()["records"]
        assert {a["thread_id"] for a in both} == {"t1", "t1@ask_dba", "t1@ask_researcher"}
        assert [a["id"] for a in both] == sorted(a["id"] for a in both)
        started = [a for a in both if a["kind"] == "subagent_started"]
        assert {(a["thread_id"], a["data"]["parent_thread_id"]) for a in started} == {
            ("t1@ask_dba", "t1"), ("t1@ask_researcher", "t1")}
        decided = [a for a in both if a["kind"] == "decision"]
        assert {(a["thread_id"], a["data"]["type"], a["data"]["via_thread_id"])
                for a in decided} == {("t1@ask_dba", "edit", "t1"),
                                      ("t1@ask_researcher", "reject", "t1")}
        # paging over both threads' rows
        page = (await s.client.get("/api/threads/t1/audit", params={
            "subagents": "true", "limit": 3})).json()
        assert [a["id"] for a in page["records"]] == [a["id"] for a in both[:3]]
        rest = (await s.client.get("/api/threads/t1/audit", params={
            "subagents": "true", "after_id": page["next_after_id"]})).json()
        assert [a["id"] for a in page["records"] + rest["records"]] == \
            [a["id"] for a in both]


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_depth_two_question_answered_on_the_top_thread(stores: StoreFactory) -> None:
    fx = Effects()
    lead = make_lead(stores(), fx)
    async with running(lead) as s, sse(s.app, "/api/inbox/events") as inbox:
        r = await s.client.post("/api/threads", params={"wait": "true"},
                                json={"message": "paint it", "thread_id": "k1"})
        assert r.status_code == 200, r.text
        (question,) = r.json()["interrupts"]
        assert question["kind"] == "input"
        assert [(p["agent"], p.get("tool_name")) for p in question["path"]] == [
            ("lead", "manager"), ("manager", "painter"), ("painter", "paint")]
        grandchild = question["path"][-1]["thread_id"]
        # the inbox stream announces the top thread only
        raised = await inbox.until(lambda e: e["event"] == "request_raised")
        assert raised["data"]["thread"]["thread_id"] == "k1"
        assert raised["data"]["thread"]["pending"][0]["path"][-1]["tool_name"] == "paint"
        # the bottom thread knows its top thread; answering there is refused with it
        bottom = (await s.client.get(f"/api/threads/{grandchild}")).json()
        assert bottom["root_thread_id"] == "k1"
        assert bottom["parent"]["thread_id"] == "k1@ask_manager"
        r = await s.client.post(f"/api/threads/{grandchild}/answer",
                                json={"interrupt_id": question["id"], "value": "blue"})
        assert r.status_code == 409, r.text
        assert (r.json()["parent_thread_id"], r.json()["root_thread_id"]) == (
            "k1@ask_manager", "k1")
        r = await s.client.post("/api/threads/k1/answer", params={"wait": "true"},
                                json={"interrupt_id": question["id"], "value": "green"})
        assert r.status_code == 200, r.text
        assert r.json()["output"] == "lead: manager=manager: painter: painted the kitchen green"
        assert fx.counts() == {"paint": 1}
        assert not [e for e in inbox.seen if e["data"].get("thread", {}).get(
            "thread_id", "k1") != "k1"]
        audit = (await s.client.get("/api/threads/k1/audit",
                                    params={"subagents": "true"})).json()["records"]
        assert {a["thread_id"] for a in audit} == {"k1", "k1@ask_manager", grandchild}
        answered = [a for a in audit if a["kind"] == "input_answered"]
        assert [(a["thread_id"], a["data"]["via_thread_id"]) for a in answered] == [
            (grandchild, "k1@ask_manager")]


@pytest.mark.parametrize("backend", ["memory"], indirect=True)
async def test_only_the_childs_reviewers_see_and_decide_its_request(
        stores: StoreFactory) -> None:
    fx = Effects()
    lead = make_lead(stores(), fx)
    async with running(lead, tokens=TOKENS) as s:
        r = await s.client.post("/api/threads", params={"wait": "true"}, headers=bearer(ADMIN),
                                json={"message": "clean up", "thread_id": "a1"})
        assert r.status_code == 200, r.text
        reqs = _by_tool((await s.client.get("/api/threads/a1", headers=bearer(ADMIN))).json())
        # bob (ops) may decide the researcher's call (no roles) but not the dba's
        r = await s.client.post("/api/threads/a1/decisions", headers=bearer(BOB), json={
            "interrupt_id": reqs["drop_table"]["id"], "decisions": [{"type": "approve"}]})
        assert r.status_code == 403, r.text
        assert "dba" in r.json()["message"]
        r = await s.client.post("/api/threads/a1/decisions", headers=bearer(BOB),
                                params={"wait": "true"}, json={
            "interrupt_id": reqs["delete_file"]["id"], "decisions": [{"type": "approve"}]})
        assert r.status_code == 200, r.text
        assert fx.counts() == {"delete_file": 1}

        # now only the dba's call waits: carol (no roles) neither lists nor reads the thread
        for token in (CAROL,):
            listing = (await s.client.get("/api/threads", headers=bearer(token),
                                          params={"status": "interrupted"})).json()
            assert listing["threads"] == []
            assert (await s.client.get("/api/threads/a1", headers=bearer(token))
                    ).status_code == 403
        # alice (dba) sees it on the parent, with its path, and decides it there
        listing = (await s.client.get("/api/threads", headers=bearer(ALICE),
                                      params={"status": "interrupted"})).json()
        assert [t["thread_id"] for t in listing["threads"]] == ["a1"]
        (pending,) = listing["threads"][0]["pending"]
        assert pending["calls"][0]["reviewers"] == ["dba"]
        assert pending["calls"][0]["path"][0]["tool_call_id"] == "ask_dba"
        r = await s.client.post("/api/threads/a1/decisions", headers=bearer(ALICE),
                                params={"wait": "true"}, json={
            "interrupt_id": reqs["drop_table"]["id"], "decisions": [{"type": "approve"}]})
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "completed"
        assert fx.counts() == {"delete_file": 1, "drop_table": 1}
        # the audit with the sub-agents' rows: each reviewer gets the threads it may read
        # (alice decided on the dba's thread, not on the researcher's; an admin reads all)
        for token, threads, decided in (
                (ALICE, {"a1", "a1@ask_dba"}, {("a1@ask_dba", "alice")}),
                (ADMIN, {"a1", "a1@ask_dba", "a1@ask_researcher"},
                 {("a1@ask_dba", "alice"), ("a1@ask_researcher", "bob")})):
            rows = (await s.client.get("/api/threads/a1/audit", headers=bearer(token),
                                       params={"subagents": "true"})).json()["records"]
            assert {a["thread_id"] for a in rows} == threads
            assert {(a["thread_id"], a["actor"]) for a in rows
                    if a["kind"] == "decision"} == decided


@pytest.mark.parametrize("backend", ["memory"], indirect=True)
async def test_list_pages_skip_sub_agent_threads(stores: StoreFactory) -> None:
    lead = make_lead(stores(), Effects())
    async with running(lead) as s:
        for n in range(5):
            r = await s.client.post("/api/threads", params={"wait": "true"},
                                    json={"message": "clean up", "thread_id": f"p{n}"})
            assert r.status_code == 200, r.text
        seen: list[str] = []
        params: dict[str, str] = {"status": "interrupted", "limit": "2"}
        while True:
            page = (await s.client.get("/api/threads", params=params)).json()
            seen += [t["thread_id"] for t in page["threads"]]
            if page["next_before"] is None:
                break
            params.update(before=page["next_before"], before_id=page["next_before_id"])
        assert sorted(seen) == [f"p{n}" for n in range(5)] and len(seen) == 5



async def test_a_sub_agents_tool_sharing_the_parents_tool_name_is_shown_as_its_own() -> None:
    """The parent and its sub-agent each gate a tool called ``purge``: one changes things, the
    other is declared read-only, with other descriptions and arguments. Each pending call is
    shown with the tool it will run (call_tools), not with whichever tool of that name came
    first."""
    from interlock import MemoryCheckpointer

    from .subagent_agents import make_same_name_team

    lead = make_same_name_team(MemoryCheckpointer())
    async with running(lead) as s:
        r = await s.client.post("/api/threads", params={"wait": "true"},
                                json={"message": "go", "thread_id": "p1"})
        assert r.status_code == 200, r.text
        detail = (await s.client.get("/api/threads/p1")).json()
    shown = {}
    for intr in detail["interrupts"]:
        for a in intr["value"]["action_requests"]:
            info = detail["call_tools"][f"{intr['id']}:{a['tool_call_id']}"]
            shown["child" if a["path"] else "own"] = (a["args"], info)
    assert set(shown) == {"own", "child"}
    own_args, own = shown["own"]
    child_args, kid = shown["child"]
    assert own_args == {"table": "sessions"} and child_args == {"pattern": "*.tmp"}
    assert own["read_only"] is False and own["description"] == "Delete every row of a table."
    assert list(own["args_schema"]["properties"]) == ["table"]
    assert kid["read_only"] is True
    assert kid["description"] == "Count what a purge would delete; changes nothing."
    assert list(kid["args_schema"]["properties"]) == ["pattern"]
