"""Sub-agents over the HTTP API (issue 18): the parent thread shows a child's request with
its path, a decision posted on the parent goes to the child (the child's rules decide
whether it is valid) and the parent finishes; a request decided twice is a 409."""

from __future__ import annotations

import pytest

from conftest import StoreFactory
from procs.subagent_team import Effects, build_team

from .conftest import eventually, running

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("backend", ["memory", "sqlite", "postgres"], indirect=True)
async def test_decisions_posted_on_the_parent_reach_the_children(stores: StoreFactory) -> None:
    effects = Effects()
    orch, _, _ = build_team(stores(), effects)
    async with running(orch) as s:
        r = await s.client.post("/api/threads", params={"wait": "true"},
                                json={"message": "clean up", "thread_id": "p1"})
        assert r.status_code == 200, r.text
        detail = (await s.client.get("/api/threads/p1")).json()
        reviews = {i["value"]["action_requests"][0]["name"]: i
                   for i in detail["interrupts"]}
        assert set(reviews) == {"delete_file", "drop_table"}
        action = reviews["drop_table"]["value"]["action_requests"][0]
        assert [(p["agent"], p.get("tool_name")) for p in action["path"]] == [
            ("orchestrator", "dba"), ("dba", "drop_table")]
        assert action["path"][1]["thread_id"] == "p1@ask_dba"

        # the child's policy refuses "respond": 422 with the child's message
        r = await s.client.post("/api/threads/p1/decisions", params={"wait": "true"}, json={
            "interrupt_id": reviews["drop_table"]["id"],
            "decisions": [{"type": "respond", "message": "no"}]})
        assert r.status_code == 422, r.text
        assert "respond" in r.json()["message"]

        # 202 first: the decision is stored (in the child) before the run goes on
        r = await s.client.post("/api/threads/p1/decisions", json={
            "interrupt_id": reviews["drop_table"]["id"],
            "decisions": [{"type": "approve"}]})
        assert r.status_code == 202, r.text

        async def settled() -> bool:
            t = (await s.client.get("/api/threads/p1")).json()
            return t["status"] == "interrupted" and len(t["interrupts"]) == 1
        await eventually(settled)
        assert effects.counts() == {"drop_table": 1}
        r = await s.client.post("/api/threads/p1/decisions", params={"wait": "true"}, json={
            "interrupt_id": reviews["drop_table"]["id"],
            "decisions": [{"type": "approve"}]})
        assert r.status_code == 409, r.text

        r = await s.client.post("/api/threads/p1/decisions", params={"wait": "true"}, json={
            "interrupt_id": reviews["delete_file"]["id"],
            "decisions": [{"type": "reject", "message": "keep it"}]})
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "completed"
        assert "keep it" in r.json()["output"]
        assert effects.counts() == {"drop_table": 1}
        audit = (await s.client.get("/api/threads/p1/audit")).json()["records"]
        assert [a["data"]["child_thread_id"] for a in audit
                if a["kind"] == "decision_routed"] == ["p1@ask_dba", "p1@ask_researcher"]
