"""The hash-chained audit log: rows written for decisions made over HTTP carry the token's
identity, and editing or deleting any row directly in the database (SQLite, Postgres) is
reported by ``verify`` (library and ``GET /api/audit/verify``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from conftest import StoreFactory
from interlock.audit import load_key, record_hash
from security import tables
from security.tables import Tables

from .conftest import ADMIN, ALICE, BOB, TOKENS, Server, bearer, running
from .server_agents import make_agent

pytestmark = pytest.mark.anyio

db = tables.db  # the fixture


class Rows(Tables):
    """Direct access to the audit table, as someone with database access would have."""

    def of(self, thread_id: str) -> list[tuple[int, dict[str, Any]]]:
        return self.audit(thread_id)

    def update(self, row_id: int, data: dict[str, Any]) -> None:
        self.set_audit(row_id, data)

    def delete(self, row_id: int) -> None:
        self.execute("DELETE FROM interlock_audit WHERE id=?", row_id)


@pytest.fixture
async def server(db: StoreFactory) -> AsyncIterator[Server]:
    async with running(make_agent(db()), tokens=TOKENS) as s:
        for tid, decision, token in [
            ("a", {"type": "edit", "edited_action": {"name": "execute_sql",
                                                     "args": {"query": "SELECT 1"}}}, ALICE),
            ("b", {"type": "approve"}, BOB),
            ("c", {"type": "reject", "message": "no"}, ALICE),
        ]:
            r = await s.client.post("/api/threads", params={"wait": "true"}, headers=bearer(BOB),
                                    json={"message": "sql DELETE FROM t", "thread_id": tid})
            assert r.json()["status"] == "interrupted"
            r = await s.client.post(f"/api/threads/{tid}/decisions", params={"wait": "true"},
                                    headers=bearer(token), json={"decisions": [decision]})
            assert r.json()["status"] == "completed", r.text
        yield s


async def verify(s: Server) -> list[dict[str, Any]]:
    r = await s.client.get("/api/audit/verify", headers=bearer(ADMIN))
    assert r.status_code == 200
    body = r.json()
    lib = await s.agent.averify_audit()
    assert [(p.thread_id, p.seq, p.problem) for p in lib] == [
        (p["thread_id"], p["seq"], p["problem"]) for p in body["problems"]]
    assert body["ok"] is (not body["problems"])
    return list(body["problems"])


async def test_intact_log_records_who_did_what(server: Server, db: StoreFactory) -> None:
    assert await verify(server) == []
    rows = Rows(db)
    kinds = [(d["kind"], d["actor"]) for _, d in rows.of("a")]
    assert kinds == [("message_posted", "bob"), ("run_started", "bob"),
                     ("request_raised", "system"), ("decision", "alice"),
                     ("tool_started", "system"), ("tool_finished", "system")]
    decision = rows.of("a")[3][1]
    assert decision["data"]["args"] == {"query": "DELETE FROM t"}
    assert decision["data"]["edited_action"]["args"] == {"query": "SELECT 1"}
    assert [d["kind"] for _, d in rows.of("c")] == ["message_posted", "run_started",
                                                    "request_raised", "decision"]
    assert rows.of("c")[3][1]["actor"] == "alice"
    assert rows.of("c")[3][1]["data"]["message"] == "no"


async def test_edited_row_is_detected(server: Server, db: StoreFactory) -> None:
    rows = Rows(db)
    row_id, data = rows.of("a")[3]
    data["actor"] = "bob"  # rewrite who decided
    rows.update(row_id, data)
    problems = await verify(server)
    assert {(p["thread_id"], p["seq"]) for p in problems} == {("a", 4)}
    assert "does not match its hash" in problems[0]["problem"]
    assert "differs from the signed one (edit by bob)" in problems[1]["problem"]


async def test_edited_args_with_a_recomputed_hash_are_detected(server: Server,
                                                               db: StoreFactory) -> None:
    rows = Rows(db)
    row_id, data = rows.of("b")[3]
    assert data["kind"] == "decision" and data["data"]["run"] == {
        "name": "execute_sql", "args": {"query": "DELETE FROM t"}}  # the exact call that ran
    data["data"]["run"]["args"] = {"query": "SELECT 1"}
    data["hash"] = _rehash(data)
    rows.update(row_id, data)
    problems = await verify(server)
    assert [(p["thread_id"], p["seq"]) for p in problems] == [("b", 4), ("b", 5)]
    assert "runs execute_sql with other arguments than the signed decision approved" in \
        problems[0]["problem"]
    assert "prev_hash does not match" in problems[1]["problem"]


async def test_edited_last_row_with_a_recomputed_hash_is_detected(server: Server,
                                                                  db: StoreFactory) -> None:
    rows = Rows(db)
    row_id, data = rows.of("c")[-1]
    data["data"]["message"] = "yes"
    data["hash"] = _rehash(data)
    rows.update(row_id, data)
    problems = await verify(server)
    assert [(p["thread_id"], p["seq"]) for p in problems] == [("c", 4), ("c", 4)]
    assert "does not match the head" in problems[0]["problem"]
    assert "decision message on call" in problems[1]["problem"]


async def test_deleted_middle_row_is_detected(server: Server, db: StoreFactory) -> None:
    rows = Rows(db)
    rows.delete(rows.of("a")[3][0])
    problems = await verify(server)
    assert ("a", 4) in [(p["thread_id"], p["seq"]) for p in problems]
    assert any("missing" in p["problem"] for p in problems)
    assert {p["thread_id"] for p in problems} == {"a"}


async def test_deleted_last_row_is_detected(server: Server, db: StoreFactory) -> None:
    rows = Rows(db)
    last_id, last = rows.of("b")[-1]
    rows.delete(last_id)
    problems = await verify(server)
    assert [(p["thread_id"], p["seq"]) for p in problems] == [("b", last["seq"])]
    assert "missing" in problems[0]["problem"]


async def test_deleted_whole_chain_is_detected(server: Server, db: StoreFactory) -> None:
    rows = Rows(db)
    for row_id, _ in rows.of("c"):
        rows.delete(row_id)
    problems = await verify(server)
    assert [(p["thread_id"], p["problem"]) for p in problems] == [("c", "rows 1..4 are missing")]


async def test_verify_one_thread(server: Server, db: StoreFactory) -> None:
    rows = Rows(db)
    rows.delete(rows.of("a")[0][0])
    r = await server.client.get("/api/audit/verify", params={"thread_id": "b"},
                                headers=bearer(ADMIN))
    assert r.json() == {"ok": True, "problems": [], "unchecked": []}
    r = await server.client.get("/api/audit/verify", params={"thread_id": "a"},
                                headers=bearer(ADMIN))
    assert r.json()["ok"] is False


def _rehash(data: dict[str, Any]) -> str:
    """The hash a forger holding the audit key would write after editing a stored row."""
    return record_hash(thread_id=data["thread_id"], seq=data["seq"], ts=_ts(data["ts"]),
                       kind=data["kind"], actor=data["actor"],
                       tool_call_id=data["tool_call_id"], data=data["data"],
                       prev_hash=data["prev_hash"], key=load_key(create=False))


def _ts(value: str) -> Any:
    from datetime import datetime

    return datetime.fromisoformat(value.replace("Z", "+00:00"))
