"""The audit log proves what was decided: someone with write access to the database (SQLite,
Postgres) rewrites rows and recomputes hashes, and ``verify`` — through the HTTP API, the
library and the CLI — reports it, or says plainly what it could not check."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import stat
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from conftest import StoreFactory
from interlock import (
    Agent,
    AuditHead,
    ConfigurationError,
    MemoryCheckpointer,
    ScriptedModel,
)
from interlock.audit import GENESIS, AuditKey, load_key, make_record, rehash
from interlock.cli import main
from interlock.storage.base import AuditRecord, Commit, ThreadRecord
from server.conftest import ADMIN, ALICE, TOKENS, Server, bearer, running
from server.server_agents import EXECUTED, make_agent

from . import tables
from .tables import Tables

db = tables.db  # the fixture

pytestmark = pytest.mark.anyio


@pytest.fixture
async def server(db: StoreFactory) -> AsyncIterator[Server]:
    """Thread ``t``: alice approved ``DELETE FROM orders`` and it ran."""
    EXECUTED.clear()
    async with running(make_agent(db()), tokens=TOKENS) as s:
        r = await s.client.post("/api/threads", params={"wait": "true"}, headers=bearer(ALICE),
                                json={"message": "sql DELETE FROM orders", "thread_id": "t"})
        assert r.json()["status"] == "interrupted"
        r = await s.client.post("/api/threads/t/decisions", params={"wait": "true"},
                                headers=bearer(ALICE), json={"decisions": [{"type": "approve"}]})
        assert r.json()["status"] == "completed", r.text
        assert EXECUTED == [("execute_sql", {"query": "DELETE FROM orders"})]
        yield s


async def verify(s: Server, **params: Any) -> dict[str, Any]:
    """``GET /api/audit/verify``; the library's answer must be the same."""
    r = await s.client.get("/api/audit/verify", params=params, headers=bearer(ALICE))
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    lib = await s.agent.averify_audit(params.get("thread_id"),
                                      allow_unsigned="allow_unsigned" in params)
    assert [(p.thread_id, p.seq, p.problem) for p in lib] == [
        (p["thread_id"], p["seq"], p["problem"]) for p in body["problems"]]
    assert lib.unchecked == body["unchecked"]
    assert body["ok"] is (not body["problems"])
    return body


async def cli(args: list[str]) -> Result:
    """``interlock ARGS`` (in a worker thread: the CLI's blocking calls refuse a running
    event loop)."""
    return await asyncio.to_thread(CliRunner().invoke, main, args)


def decision_row(tables: Tables) -> dict[str, Any]:
    (_, row), = [(i, d) for i, d in tables.audit("t") if d["kind"] == "decision"]
    return row


async def test_decision_row_records_the_exact_call_that_runs(server: Server, db: StoreFactory
                                                              ) -> None:
    row = decision_row(Tables(db))
    assert row["actor"] == "alice" and row["key_id"] == load_key(create=False).key_id  # type: ignore[union-attr]
    assert row["data"]["run"] == {"name": "execute_sql", "args": {"query": "DELETE FROM orders"}}
    assert await verify(server) == {"ok": True, "problems": [], "unchecked": []}


@pytest.mark.parametrize("forger", ["made-up key", "unsigned rows"])
async def test_rewritten_and_rehashed_row_is_reported(server: Server, db: StoreFactory,
                                                      forger: str) -> None:
    tables = Tables(db)
    seq = decision_row(tables)["seq"]
    guessed = AuditKey(secrets.token_hex(32).encode(), "the forger") \
        if forger == "made-up key" else None
    # hide that alice approved the DELETE: the row now says bob approved a harmless query;
    # every later hash and the chain head in the thread row are recomputed to match
    tables.forge("t", seq, {"run": {"name": "execute_sql", "args": {"query": "SELECT 1"}}},
                 guessed)
    body = await verify(server)
    assert body["ok"] is False
    at_row = [p["problem"] for p in body["problems"] if p["seq"] == seq]
    if guessed is not None:
        assert "content does not match its hash (an HMAC under the audit key)" in at_row
    else:
        assert any(p.startswith("unsigned row after signed rows") for p in at_row)
    # the journal still says what ran, and disagrees with the rewritten row
    assert any("runs execute_sql with other arguments than the signed decision" in p
               for p in at_row)


async def test_an_entirely_unsigned_chain_is_refused_unless_allowed(server: Server,
                                                                    db: StoreFactory) -> None:
    Tables(db).forge("t", 1, {}, None)  # every row downgraded to a plain SHA-256
    body = await verify(server)
    assert {p["seq"] for p in body["problems"]} == {1, 2, 3, 4, 5, 6}
    assert all(p["problem"].startswith("unsigned row") for p in body["problems"])
    # a database from before signed rows: the plain chain is checked, and the weakness stated
    allowed = await verify(server, allow_unsigned="true")
    assert allowed["ok"] is True
    assert any("6 row(s) were written before audit rows were signed" in u
               for u in allowed["unchecked"])


async def test_rewritten_journal_argument_is_reported(server: Server, db: StoreFactory) -> None:
    tables = Tables(db)
    call_id = decision_row(tables)["tool_call_id"]
    entry = tables.journal("t", call_id)
    entry["args"] = {"query": "SELECT 1"}  # "the reviewer only approved a SELECT"
    tables.set_journal("t", call_id, entry)
    body = await verify(server)
    problems = [(p["seq"], p["problem"]) for p in body["problems"]]
    kinds = {d["seq"]: d["kind"] for _, d in tables.audit("t")}
    flagged = {kinds[s] for s, _ in problems if s is not None}
    assert {"request_raised", "decision"} <= flagged
    assert any("message 1: call" in p and "differs from its journal row" in p
               for _, p in problems)


async def test_rewritten_argument_in_the_messages_is_reported(server: Server, db: StoreFactory
                                                              ) -> None:
    tables = Tables(db)
    (seq, msg), = [(s, m) for s, m in tables.messages("t") if m.get("tool_calls")]
    msg["tool_calls"][0]["args"] = {"query": "SELECT 1"}
    tables.set_message("t", seq, msg)
    body = await verify(server)
    assert [p["problem"] for p in body["problems"]] == [
        f"message {seq}: call {msg['tool_calls'][0]['id']!r} (execute_sql) differs from its "
        f"journal row"]


async def test_rewritten_pending_call_is_reported_after_the_approval(db: StoreFactory) -> None:
    """The database writer changes a pending call before the reviewer looks: what the
    reviewer approved (and what ran) is not what the model proposed and the request signed."""
    async with running(make_agent(db()), tokens=TOKENS) as s:
        r = await s.client.post("/api/threads", params={"wait": "true"}, headers=bearer(ALICE),
                                json={"message": "sql SELECT 1", "thread_id": "t"})
        call_id = r.json()["interrupts"][0]["value"]["action_requests"][0]["tool_call_id"]
        tables = Tables(db)
        entry = tables.journal("t", call_id)
        entry["args"] = {"query": "DROP TABLE orders"}
        tables.set_journal("t", call_id, entry)
        row = tables.thread("t")
        row["pending"][0]["value"]["action_requests"][0]["args"] = entry["args"]
        tables.set_thread("t", row)
        (seq, msg), = [(n, m) for n, m in tables.messages("t") if m.get("tool_calls")]
        msg["tool_calls"][0]["args"] = entry["args"]
        tables.set_message("t", seq, msg)
        r = await s.client.post("/api/threads/t/decisions", params={"wait": "true"},
                                headers=bearer(ALICE), json={"decisions": [{"type": "approve"}]})
        assert r.json()["status"] == "completed"
        body = await verify(s)
        assert body["ok"] is False
        raised = next(d["seq"] for _, d in tables.audit("t") if d["kind"] == "request_raised")
        assert [p["seq"] for p in body["problems"]] == [raised]
        assert "differs from the call this review request signed" in \
            body["problems"][0]["problem"]


async def test_without_the_key_verify_says_what_it_cannot_check(
        server: Server, db: StoreFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tables = Tables(db)
    seq = decision_row(tables)["seq"]
    tables.forge("t", seq, {"interrupt_id": "forged"},
                 AuditKey(secrets.token_hex(32).encode(), "the forger"))
    missing = tmp_path / "elsewhere" / "audit.key"
    monkeypatch.delenv("INTERLOCK_AUDIT_KEY", raising=False)
    monkeypatch.setenv("INTERLOCK_AUDIT_KEY_FILE", str(missing))
    body = await verify(server)
    # the links still hold (the forger recomputed them); the signatures cannot be checked
    assert body["problems"] == [] and body["ok"] is True
    (note,) = body["unchecked"]
    assert note.startswith(f"No audit key was found at {missing}")
    assert "the signatures of 6 row(s) were not checked" in note
    assert "would not be detected" in note
    assert not missing.exists()  # verification never creates a key
    out = await cli(["audit", "verify", "--db", db.url()])
    assert out.exit_code == 0, out.output
    assert "not checked: No audit key was found" in out.stderr
    assert "audit log intact (partly: see 'not checked' above)" in out.stdout
    monkeypatch.undo()
    assert (await verify(server))["ok"] is False  # with the key: reported


async def test_an_exported_head_catches_a_rewrite_by_someone_holding_the_key(
        server: Server, db: StoreFactory, tmp_path: Path) -> None:
    r = await server.client.get("/api/audit/head", headers=bearer(ADMIN))
    assert r.status_code == 200
    head = r.json()
    assert (head["threads"], head["rows"]) == (1, 6)
    # later activity is not a problem: the head covers the rows up to its last_id
    r = await server.client.post("/api/threads", params={"wait": "true"}, headers=bearer(ALICE),
                                 json={"message": "hello", "thread_id": "later"})
    assert r.json()["status"] == "completed"
    r = await server.client.post("/api/audit/verify", json={"head": head}, headers=bearer(ADMIN))
    assert r.json() == {"ok": True, "problems": [], "unchecked": []}
    # someone with the database *and* the key rewrites a row and re-signs everything
    tables = Tables(db)
    key = load_key(create=False)
    seq = decision_row(tables)["seq"]
    tables.forge("t", seq, {"run": {"name": "execute_sql", "args": {"query": "SELECT 1"}}}, key)
    call_id = decision_row(tables)["tool_call_id"]
    entry = tables.journal("t", call_id)
    entry["exec_args"] = {"query": "SELECT 1"}
    tables.set_journal("t", call_id, entry)
    assert [p["problem"] for p in (await verify(server))["problems"]] == [
        f"the journal's call {call_id!r} now names execute_sql with other arguments than the "
        f"ones that were started"]
    r = await server.client.post("/api/audit/verify", json={"head": head}, headers=bearer(ADMIN))
    problems = r.json()["problems"]
    assert problems[-1]["thread_id"] == "" and problems[-1]["seq"] is None
    assert problems[-1]["problem"].startswith(
        f"the audit rows up to id {head['last_id']} no longer match it")
    # the CLI: export-head, then verify --head; an edited head is refused
    fresh = tmp_path / "head.json"
    out = await cli(["audit", "export-head", "--db", db.url()])
    assert out.exit_code == 0, out.output
    fresh.write_text(out.stdout)
    ok = await cli(["audit", "verify", "--db", db.url(), "--thread", "later", "--head",
                    str(fresh)])
    assert ok.exit_code == 0, ok.output
    edited = AuditHead.model_validate_json(out.stdout).model_copy(update={"rows": 3})
    fresh.write_text(edited.model_dump_json())
    out = await cli(["audit", "verify", "--db", db.url(), "--thread", "later", "--head",
                     str(fresh)])
    assert out.exit_code == 1
    assert "exported head: its signature does not match" in out.stderr


def test_key_file_is_created_on_first_use_with_0600(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    monkeypatch.delenv("INTERLOCK_AUDIT_KEY", raising=False)
    monkeypatch.delenv("INTERLOCK_AUDIT_KEY_FILE", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    path = tmp_path / "config" / "interlock" / "audit.key"
    agent = make_agent(MemoryCheckpointer())
    assert agent.verify_audit().unchecked == [] and not path.exists()
    agent.invoke("sql SELECT 1", thread_id="t")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    key = load_key(create=False)
    assert key is not None and key.source == str(path) and len(path.read_text().strip()) == 64
    assert {r.key_id for r in agent.audit("t")} == {key.key_id}
    assert agent.verify_audit() == [] and agent.verify_audit().unchecked == []
    # a key that other users can read is refused, with the fix
    os.chmod(path, 0o644)
    monkeypatch.setenv("INTERLOCK_AUDIT_KEY_FILE", str(path))  # not the cached lookup
    with pytest.raises(ConfigurationError, match="chmod 600"):
        agent.resume("t", [{"type": "approve"}])
    assert agent.get_thread("t").status == "interrupted"  # nothing stored
    # a key given in the environment wins, and a short one is refused
    monkeypatch.setenv("INTERLOCK_AUDIT_KEY", "short")
    with pytest.raises(ConfigurationError, match="at least 32"):
        load_key(create=True)


async def test_chains_written_before_signed_rows_keep_verifying() -> None:
    """A database written before audit keys: its rows carry a plain SHA-256 and no key id.
    They verify with allow_unsigned; rows appended after the upgrade are signed, and an
    unsigned row after a signed one is always a problem."""
    store = MemoryCheckpointer()
    agent = Agent(model=ScriptedModel(["hi"]), checkpointer=store)
    rows: list[AuditRecord] = []
    prev = GENESIS
    now = datetime.now(UTC)
    for seq, kind in enumerate(["request_raised", "decision"], start=1):
        rec = AuditRecord(thread_id="old", seq=seq, ts=now, kind=kind, actor="alice",
                          data={"n": seq}, prev_hash=prev, hash="")
        rec = rec.model_copy(update={"hash": rehash(rec, None)})
        rows.append(rec)
        prev = rec.hash
    thread = ThreadRecord(thread_id="old", created_at=now, updated_at=now, version=1,
                          audit_seq=2, audit_hash=prev)
    await store.commit(Commit(thread=thread, audit=rows), expected_version=None)
    assert [p.problem[:13] for p in await agent.averify_audit()] == ["unsigned row "] * 2
    report = await agent.averify_audit(allow_unsigned=True)
    assert report == [] and "2 row(s) were written before" in report.unchecked[0]
    # the thread continues after the upgrade: its new rows are signed, chained onto the old
    signed = make_record(thread_id="old", seq=3, prev_hash=prev, ts=now, kind="decision",
                         actor="bob")
    thread = thread.model_copy(update={"version": 2, "audit_seq": 3, "audit_hash": signed.hash})
    await store.commit(Commit(thread=thread, audit=[signed]), expected_version=1)
    assert await agent.averify_audit(allow_unsigned=True) == []
    # a tampered unsigned row is still caught by its plain hash
    data = json.loads(store._audit[0])
    data["actor"] = "mallory"
    store._audit[0] = json.dumps(data)
    problems = await agent.averify_audit(allow_unsigned=True)
    assert [(p.seq, p.problem) for p in problems] == [(1, "content does not match its hash")]
    # an unsigned row after a signed one is reported even when unsigned rows are allowed
    late = AuditRecord(thread_id="old", seq=4, ts=now, kind="decision", actor="x",
                       prev_hash=signed.hash, hash="")
    late = late.model_copy(update={"hash": rehash(late, None)})
    thread = thread.model_copy(update={"version": 3, "audit_seq": 4, "audit_hash": late.hash})
    await store.commit(Commit(thread=thread, audit=[late]), expected_version=2)
    problems = await agent.averify_audit(allow_unsigned=True)
    assert problems[-1].seq == 4 and problems[-1].problem.startswith(
        "unsigned row after signed rows")
