"""How a call was decided, for a reviewer who lost the race: GET
/api/threads/{id}/calls/{call_id} (Agent.call_outcome) answers the thread's readers and anyone
who could decide the call, even once the thread itself is no longer theirs to read; nobody
else."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import ALICE, BOB, CAROL, Server, bearer

SQL = "DELETE FROM orders WHERE id = 7"


async def start(s: Server, message: str, thread_id: str, token: str) -> dict[str, Any]:
    r = await s.client.post("/api/threads", params={"wait": "true"}, headers=bearer(token),
                            json={"message": message, "thread_id": thread_id})
    assert r.status_code == 200, r.text
    return dict(r.json())


@pytest.mark.anyio
async def test_a_reviewer_who_lost_the_race_learns_who_decided_what(secured: Server) -> None:
    intr = (await start(secured, f"sql {SQL}", "race", BOB))["interrupts"][0]
    call_id = intr["value"]["action_requests"][0]["tool_call_id"]
    url = f"/api/threads/race/calls/{call_id}"
    pending = await secured.client.get(url, headers=bearer(CAROL))
    assert pending.status_code == 200, pending.text
    assert pending.json()["decision"] is None and pending.json()["decided_by"] is None
    r = await secured.client.post(
        "/api/threads/race/decisions", params={"wait": "true"}, headers=bearer(ALICE),
        json={"interrupt_id": intr["id"],
              "decisions": [{"type": "reject", "message": "not during the sale"}]})
    assert r.status_code == 200, r.text
    # carol (no roles) could decide the call; now she may not read the thread...
    assert (await secured.client.get("/api/threads/race", headers=bearer(CAROL))
            ).status_code == 403
    # ...but she sees who decided it, what and when
    seen = await secured.client.get(url, headers=bearer(CAROL))
    assert seen.status_code == 200, seen.text
    out = seen.json()
    assert (out["decided_by"], out["decision"], out["message"], out["name"]) == (
        "alice", "reject", "not during the sale", "execute_sql")
    assert out["decided_at"] and out["runs"] is None
    assert out == (await secured.client.get(url, headers=bearer(BOB))).json()


@pytest.mark.anyio
async def test_who_could_not_decide_the_call_is_not_told(secured: Server) -> None:
    intr = (await start(secured, "drop customers", "dba-only", ALICE))["interrupts"][0]
    call_id = intr["value"]["action_requests"][0]["tool_call_id"]
    for token in (BOB, CAROL):  # neither holds the dba role the call names
        r = await secured.client.get(f"/api/threads/dba-only/calls/{call_id}",
                                     headers=bearer(token))
        assert r.status_code == 403, r.text
        assert "could not decide the call" in r.json()["message"]
    missing = await secured.client.get("/api/threads/dba-only/calls/nope", headers=bearer(ALICE))
    assert missing.status_code == 404 and missing.json()["error"] == "CallNotFound"
    gone = await secured.client.get("/api/threads/no-such/calls/x", headers=bearer(ALICE))
    assert gone.status_code == 404
    # over HTTP, an unknown thread is explained in HTTP terms, not as a Python call
    assert "POST /api/threads" in gone.json()["message"]
    assert "agent.invoke" not in gone.json()["message"]


@pytest.mark.anyio
async def test_local_mode_reads_the_outcome(local: Server) -> None:
    intr = (await local.client.post("/api/threads", params={"wait": "true"},
                                    json={"message": f"sql {SQL}", "thread_id": "l"})).json()[
        "interrupts"][0]
    call_id = intr["value"]["action_requests"][0]["tool_call_id"]
    await local.client.post("/api/threads/l/decisions", params={"wait": "true"},
                            json={"interrupt_id": intr["id"],
                                  "decisions": [{"type": "approve"}]})
    out = (await local.client.get(f"/api/threads/l/calls/{call_id}")).json()
    assert (out["decided_by"], out["decision"]) == ("local", "approve"), out
