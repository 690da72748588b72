"""An audit row is bound to its place: the thread it is stored under and its position there.
Someone with write access to the database (SQLite, Postgres) moves a decision to another
thread, swaps rows between threads, swaps the ids or positions of two rows, swaps their
contents, or deletes one — and ``verify`` (HTTP API, library) reports each change at the rows
concerned. Before, the moved decision was listed under the other thread while ``verify`` said
intact."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from conftest import StoreFactory
from server.conftest import ALICE, TOKENS, Server, bearer, running
from server.server_agents import make_agent

from . import tables
from .tables import Tables

db = tables.db  # the fixture

pytestmark = pytest.mark.anyio


@pytest.fixture
async def server(db: StoreFactory) -> AsyncIterator[Server]:
    """Threads ``t`` and ``u``: alice approved a DELETE in each, and it ran."""
    async with running(make_agent(db()), tokens=TOKENS) as s:
        for tid, query in (("t", "DELETE FROM orders"), ("u", "DELETE FROM users")):
            r = await s.client.post("/api/threads", params={"wait": "true"},
                                    headers=bearer(ALICE),
                                    json={"message": f"sql {query}", "thread_id": tid})
            assert r.json()["status"] == "interrupted"
            r = await s.client.post(f"/api/threads/{tid}/decisions", params={"wait": "true"},
                                    headers=bearer(ALICE),
                                    json={"decisions": [{"type": "approve"}]})
            assert r.json()["status"] == "completed", r.text
        yield s


async def problems(s: Server, thread_id: str | None = None) -> list[tuple[str, int | None, str]]:
    """What ``GET /api/audit/verify`` reports (the library's answer must be the same)."""
    params = {"thread_id": thread_id} if thread_id else {}
    r = await s.client.get("/api/audit/verify", params=params, headers=bearer(ALICE))
    assert r.status_code == 200, r.text
    found = [(p["thread_id"], p["seq"], p["problem"]) for p in r.json()["problems"]]
    lib = await s.agent.averify_audit(thread_id)
    assert [(p.thread_id, p.seq, p.problem) for p in lib] == found
    return found


def rows(t: Tables, thread_id: str) -> list[tuple[int, int, str]]:
    """``(id, seq, kind)`` of a thread's stored rows, in seq order."""
    return [(i, d["seq"], d["kind"]) for i, d in t.audit(thread_id)]


def decision(t: Tables, thread_id: str) -> tuple[int, int]:
    (found,) = [(i, seq) for i, seq, kind in rows(t, thread_id) if kind == "decision"]
    return found


def moved(t: Tables) -> None:
    """t's decision row moved to the end of u's chain (listed under u from now on)."""
    row_id, _ = decision(t, "t")
    last = max(seq for _, seq, _ in rows(t, "u"))
    t.execute("UPDATE interlock_audit SET thread_id='u', seq=? WHERE id=?", last + 1, row_id)


def threads_swapped(t: Tables) -> None:
    """The decision rows of t and u (same position) swap threads."""
    a, _ = decision(t, "t")
    b, _ = decision(t, "u")
    t.execute("UPDATE interlock_audit SET thread_id='x' WHERE id=?", a)
    t.execute("UPDATE interlock_audit SET thread_id='t' WHERE id=?", b)
    t.execute("UPDATE interlock_audit SET thread_id='u' WHERE id=?", a)


def _pair(t: Tables) -> tuple[int, int]:
    """The ids of t's review request and of its decision."""
    (req,) = [i for i, _, kind in rows(t, "t") if kind == "request_raised"]
    dec, _ = decision(t, "t")
    return req, dec


def ids_swapped(t: Tables) -> None:
    """t's review request and its decision swap ids: listed in the other order."""
    a, b = _pair(t)
    t.execute("UPDATE interlock_audit SET id=-1 WHERE id=?", a)
    t.execute("UPDATE interlock_audit SET id=? WHERE id=?", a, b)
    t.execute("UPDATE interlock_audit SET id=? WHERE id=-1", b)


def positions_swapped(t: Tables) -> None:
    """t's review request and its decision swap positions (seq)."""
    (sa, a), (sb, b) = [(s, i) for i, s, _ in rows(t, "t") if i in _pair(t)]
    t.execute("UPDATE interlock_audit SET seq=-1 WHERE id=?", a)
    t.execute("UPDATE interlock_audit SET seq=? WHERE id=?", sa, b)
    t.execute("UPDATE interlock_audit SET seq=? WHERE id=?", sb, a)


def contents_swapped(t: Tables) -> None:
    """t's review request and its decision swap their stored contents."""
    a, b = _pair(t)
    (da,), = t.query("SELECT data FROM interlock_audit WHERE id=?", a)
    (db_,), = t.query("SELECT data FROM interlock_audit WHERE id=?", b)
    t.execute("UPDATE interlock_audit SET data=? WHERE id=?", db_, a)
    t.execute("UPDATE interlock_audit SET data=? WHERE id=?", da, b)


def deleted(t: Tables) -> None:
    row_id, _ = decision(t, "t")
    t.execute("DELETE FROM interlock_audit WHERE id=?", row_id)


TAMPERS: dict[str, Callable[[Tables], None]] = {
    "moved": moved, "threads swapped": threads_swapped, "ids swapped": ids_swapped,
    "positions swapped": positions_swapped, "contents swapped": contents_swapped,
    "deleted": deleted,
}


@pytest.mark.parametrize("tamper", list(TAMPERS))
async def test_a_row_out_of_its_place_is_reported(server: Server, db: StoreFactory,
                                                  tamper: str) -> None:
    t = Tables(db)
    assert await problems(server) == []
    _, dec_seq = decision(t, "t")
    before = {tid: rows(t, tid) for tid in ("t", "u")}
    TAMPERS[tamper](t)
    assert {tid: rows(t, tid) for tid in ("t", "u")} != before
    stored = t.dump()
    found = await problems(server)
    assert found, f"{tamper}: verify said intact"
    where: set[tuple[str, Any]] = {(tid, seq) for tid, seq, _ in found}
    if tamper in ("moved", "deleted"):
        # the place the decision left is a gap in t's chain
        assert ("t", dec_seq) in where
        assert any("missing" in p for tid, _, p in found if tid == "t")
    if tamper == "moved":
        assert any(tid == "u" and "content does not match its hash" in p
                   for tid, _, p in found), found
        assert await problems(server, "u"), "verifying u alone says intact"
    if tamper == "threads swapped":
        assert ("t", dec_seq) in where and ("u", dec_seq) in where
    if tamper in ("ids swapped", "positions swapped", "contents swapped"):
        assert {tid for tid, _, _ in found} == {"t"}
    # one thread's verification finds what concerns it
    assert await problems(server, "t")
    assert t.dump() == stored  # verifying changes nothing
