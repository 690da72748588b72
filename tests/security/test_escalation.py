"""Role escalation by edit: a reviewer who may decide an unrestricted call edits it into a call
of a role-restricted tool. Refused in the core (NotAuthorized / 403) and nothing runs."""

from __future__ import annotations

import pytest

from interlock import Agent, NotAuthorized, Reviewer
from interlock.storage.memory import MemoryCheckpointer
from server.conftest import ALICE, BOB, CAROL, Server, bearer
from server.server_agents import EXECUTED, make_agent

SQL = "UPDATE orders SET status = 'x' WHERE id = 7"
TO_DROP = {"type": "edit", "edited_action": {"name": "drop_table",
                                             "args": {"table": "customers"}}}


@pytest.mark.anyio
async def test_edit_into_a_restricted_tool_is_403_and_nothing_runs(secured: Server) -> None:
    r = await secured.client.post("/api/threads", params={"wait": "true"}, headers=bearer(BOB),
                                  json={"message": f"sql {SQL}", "thread_id": "esc"})
    intr = r.json()["interrupts"][0]
    assert intr["value"]["review_configs"][0].get("reviewers") is None  # anyone may decide
    before = await secured.agent.aget_thread("esc")
    rows = await secured.agent.aaudit("esc")
    for token in (BOB, CAROL):
        r = await secured.client.post(
            "/api/threads/esc/decisions", params={"wait": "true"}, headers=bearer(token),
            json={"interrupt_id": intr["id"], "decisions": [TO_DROP]})
        assert r.status_code == 403, r.text
        assert r.json()["error"] == "NotAuthorized"
        assert "into tool 'drop_table'" in r.json()["message"]
        assert "dba" in r.json()["message"]
    after = await secured.agent.aget_thread("esc")
    assert (after.version, after.status) == (before.version, "interrupted")
    assert await secured.agent.aaudit("esc") == rows
    assert EXECUTED == []
    # the same edit by a holder of the target tool's role goes through: the check is the role
    r = await secured.client.post(
        "/api/threads/esc/decisions", params={"wait": "true"}, headers=bearer(ALICE),
        json={"interrupt_id": intr["id"], "decisions": [TO_DROP]})
    assert r.status_code == 200, r.text
    assert EXECUTED == [("drop_table", {"table": "customers"})]


def test_library_refuses_the_same_edit() -> None:
    agent: Agent = make_agent(MemoryCheckpointer())
    result = agent.invoke(f"sql {SQL}", thread_id="lib")
    assert result.interrupted
    bob = Reviewer("bob", frozenset({"ops"}))
    with pytest.raises(NotAuthorized, match="need one of the roles: dba"):
        agent.resume("lib", [TO_DROP], reviewer=bob)
    assert EXECUTED == []
    assert agent.get_thread("lib").status == "interrupted"
    # an edit that keeps the tool is still the reviewer's to make
    done = agent.resume("lib", [{"type": "edit", "edited_action": {
        "name": "execute_sql", "args": {"query": "SELECT 1"}}}], reviewer=bob)
    assert done.status == "completed"
    assert EXECUTED == [("execute_sql", {"query": "SELECT 1"})]


def test_edit_into_a_tool_whose_policy_forbids_approve_is_refused() -> None:
    agent: Agent = make_agent(MemoryCheckpointer())
    agent.invoke(f"sql {SQL}", thread_id="resp")
    # ask_user allows only respond / reject: no edit can make it run
    with pytest.raises(NotAuthorized, match="does not allow 'approve'"):
        agent.resume("resp", [{"type": "edit", "edited_action": {
            "name": "ask_user", "args": {"question": "?"}}}],
            reviewer=Reviewer("alice", frozenset({"dba"})))
    assert EXECUTED == []
