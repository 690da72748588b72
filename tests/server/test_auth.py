"""Reviewer authentication and roles: tokens -> identities, 401 / 403, the identity recorded in
the audit log comes from the token (never the body), loopback-only local mode."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from interlock import Agent, ConfigurationError
from interlock.server import TokenAuth, build_server, check_bind
from interlock.server.auth import host_header_is_loopback, is_loopback, load_tokens

from .conftest import ADMIN, ALICE, BOB, CAROL, TOKENS, Server, bearer, running
from .server_agents import EXECUTED

SQL = "DELETE FROM orders WHERE id = 7"


async def start(s: Server, message: str, thread_id: str, token: str = ALICE) -> dict[str, Any]:
    r = await s.client.post("/api/threads", params={"wait": "true"}, headers=bearer(token),
                            json={"message": message, "thread_id": thread_id})
    assert r.status_code == 200, r.text
    return dict(r.json())


async def audit(s: Server, thread_id: str) -> list[dict[str, Any]]:
    """The thread's audit rows, read by the application itself (no reviewer)."""
    return [r.model_dump(mode="json") for r in await s.agent.aaudit(thread_id)]


# -- 401 --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_missing_or_wrong_token_is_401(secured: Server) -> None:
    c = secured.client
    for headers in ({}, {"Authorization": "Bearer not-a-real-token-at-all"},
                    {"Authorization": f"Basic {ALICE}"}):
        for r in [await c.get("/api/threads", headers=headers),
                  await c.get("/api/me", headers=headers),
                  await c.post("/api/threads", headers=headers, json={"message": "hi"}),
                  await c.get("/api/audit", headers=headers),
                  await c.get("/api/inbox/events", headers=headers)]:
            assert r.status_code == 401, r.text
            assert r.json()["error"] == "Unauthorized"
            assert r.headers["www-authenticate"].startswith("Bearer")
    assert (await c.get("/api/health")).status_code == 200  # liveness stays public
    assert (await c.get("/")).status_code == 200  # the page itself holds no data
    assert await secured.agent.alist_threads() == []


@pytest.mark.anyio
async def test_me_reports_the_token_identity(secured: Server) -> None:
    r = await secured.client.get("/api/me", headers=bearer(BOB))
    assert r.json() == {"id": "bob", "roles": ["ops"], "auth": True}


# -- roles ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_token_without_the_role_gets_403_and_nothing_changes(secured: Server) -> None:
    result = await start(secured, "drop customers", "d", token=BOB)
    intr = result["interrupts"][0]
    assert intr["value"]["review_configs"][0]["reviewers"] == ["dba"]
    before = await secured.agent.aget_thread("d")
    rows_before = await audit(secured, "d")
    for token in (BOB, CAROL):
        r = await secured.client.post(
            "/api/threads/d/decisions", params={"wait": "true"}, headers=bearer(token),
            json={"interrupt_id": intr["id"], "decisions": [{"type": "approve"}]})
        assert r.status_code == 403, r.text
        assert r.json()["error"] == "NotAuthorized"
        assert "needs one of the roles: dba" in r.json()["message"]
        r = await secured.client.post("/api/threads/d/cancel", headers=bearer(token), json={})
        assert r.status_code == 403 and r.json()["error"] == "NotAuthorized"
    after = await secured.agent.aget_thread("d")
    assert (after.version, after.status) == (before.version, "interrupted")
    assert await audit(secured, "d") == rows_before
    assert EXECUTED == []
    r = await secured.client.post(
        "/api/threads/d/decisions", params={"wait": "true"}, headers=bearer(ALICE),
        json={"interrupt_id": intr["id"], "decisions": [{"type": "approve"}]})
    assert r.status_code == 200, r.text
    assert EXECUTED == [("drop_table", {"table": "customers"})]
    decision = next(a for a in await audit(secured, "d") if a["kind"] == "decision")
    assert decision["actor"] == "alice"


@pytest.mark.anyio
async def test_forged_reviewer_in_the_body_is_ignored(secured: Server) -> None:
    intr = (await start(secured, f"sql {SQL}", "f", token=BOB))["interrupts"][0]
    r = await secured.client.post(
        "/api/threads/f/decisions", params={"wait": "true"}, headers=bearer(BOB),
        json={"interrupt_id": intr["id"], "reviewer": {"id": "alice", "roles": ["dba"]},
              "actor": "alice", "decisions": [{"type": "reject", "message": "not today"}]})
    assert r.status_code == 200, r.text
    decision = next(a for a in await audit(secured, "f") if a["kind"] == "decision")
    assert decision["actor"] == "bob"
    assert decision["data"]["message"] == "not today"
    journal = await secured.agent.ajournal("f")
    assert journal[0].decided_by == "bob"
    # a forged identity cannot unlock a role-restricted request either
    drop = (await start(secured, "drop users", "g", token=BOB))["interrupts"][0]
    r = await secured.client.post(
        "/api/threads/g/decisions", headers=bearer(BOB),
        json={"interrupt_id": drop["id"], "reviewer": {"id": "alice", "roles": ["dba"]},
              "decisions": [{"type": "approve"}]})
    assert r.status_code == 403
    assert EXECUTED == []


@pytest.mark.anyio
async def test_every_write_is_recorded_with_the_token_identity(secured: Server) -> None:
    await start(secured, "twice SELECT 1", "r", token=CAROL)
    r = await secured.client.post("/api/threads/r/decisions", params={"wait": "true"},
                                  headers=bearer(BOB),
                                  json={"decisions": [{"type": "approve", "remember": "thread"}]})
    assert r.json()["status"] == "completed"
    r = await secured.client.delete("/api/threads/r/remembered/execute_sql", headers=bearer(CAROL))
    assert r.status_code == 200
    await start(secured, "pick", "p", token=CAROL)
    r = await secured.client.post("/api/threads/p/answer", params={"wait": "true"},
                                  headers=bearer(CAROL), json={"value": "red", "reviewer": "bob"})
    assert r.json()["output"] == "Done. colour is red"
    await start(secured, f"sql {SQL}", "c", token=CAROL)
    r = await secured.client.post("/api/threads/c/cancel", headers=bearer(CAROL),
                                  json={"reason": "dup"})
    assert r.status_code == 200
    actors = {(a["kind"], a["actor"]) for t in ("r", "p", "c") for a in await audit(secured, t)}
    assert {("decision", "bob"), ("rule_created", "bob"), ("rule_revoked", "carol"),
            ("input_answered", "carol"), ("cancelled", "carol")} <= actors
    rules = (await secured.agent.aget_thread("r")).remembered
    assert rules == []


# -- token configuration ----------------------------------------------------------------------


def test_token_files_toml_json_and_env(tmp_path: Path) -> None:
    toml = tmp_path / "tokens.toml"
    toml.write_text(
        '[[reviewers]]\nid = "alice"\nroles = ["dba"]\ntoken = "' + ALICE + '"\n\n'
        '[[reviewers]]\nid = "bob"\ntoken_sha256 = "'
        + hashlib.sha256(BOB.encode()).hexdigest() + '"\n')
    auth = TokenAuth.from_file(toml)
    alice = auth.authenticate(ALICE)
    assert alice is not None and (alice.id, alice.roles) == ("alice", frozenset({"dba"}))
    bob = auth.authenticate(BOB)
    assert bob is not None and bob.id == "bob" and bob.roles == frozenset()
    assert auth.authenticate(CAROL) is None
    assert auth.authenticate(ALICE[:-1]) is None

    js = tmp_path / "tokens.json"
    js.write_text(json.dumps(TOKENS))
    auth = TokenAuth.from_file(js)
    assert sorted(i.id for i in auth.identities) == ["alice", "bob", "carol", "root"]

    env = {"INTERLOCK_TOKENS": json.dumps({CAROL: "carol"})}
    from_env = TokenAuth.from_env(env)
    assert from_env is not None and from_env.authenticate(CAROL) is not None
    assert TokenAuth.from_env({}) is None
    file_env = TokenAuth.from_env({"INTERLOCK_TOKENS_FILE": str(js)})
    assert file_env is not None and len(file_env) == 4
    assert load_tokens(None, use_env=False) is None


@pytest.mark.parametrize(("config", "problem"), [
    ({"short": "alice"}, "at least 16 characters"),
    ({ALICE: {"id": "system:expiry"}}, "reserved"),
    ({ALICE: {"id": "rule:x"}}, "reserved"),
    ({ALICE: {"roles": ["dba"]}}, "non-empty string 'id'"),
    ({ALICE: {"id": "a", "roles": "dba"}}, "must be a list of strings"),
    ({"reviewers": [{"id": "a"}]}, "exactly one of 'token' or 'token_sha256'"),
    ({"reviewers": [{"id": "a", "token_sha256": "abc"}]}, "64 hex digits"),
    ({"reviewers": [{"id": "a", "token": ALICE}, {"id": "b", "token": ALICE}]}, "twice"),
    ({}, "no tokens"),
    ([ALICE], "expected"),
])
def test_bad_token_configuration_is_refused(config: Any, problem: str) -> None:
    with pytest.raises(ConfigurationError, match=problem):
        TokenAuth.from_config(config)


def test_a_reversed_short_form_entry_is_explained_without_showing_the_token(
        tmp_path: Path) -> None:
    """``alice = "<token>"`` (a name, then its token) used to be read as the token "alice" for
    a reviewer named by the secret, and the error printed the secret: "token for '<token>'"."""
    secret = "Jc2x0m3v7qS9tYp1Lk4Zb8Rw"
    path = tmp_path / "tokens.toml"
    path.write_text(f'alice = "{secret}"\n')
    with pytest.raises(ConfigurationError) as caught:
        TokenAuth.from_file(path)
    text = str(caught.value)
    assert secret not in text
    assert "entry #1, 'alice' = ...: this looks like a name followed by its token" in text
    assert "[[reviewers]] with id = 'alice'" in text
    with pytest.raises(ConfigurationError, match=r"entry #2 \(reviewer 'bob'\): tokens must be "
                                                 r"strings of at least 16 characters"):
        TokenAuth.from_config({ALICE: "alice", "tooshort": {"id": "bob"}})
    with pytest.raises(ConfigurationError) as short:
        TokenAuth.from_config({"tooshort": "alice-the-reviewer"})
    assert "alice-the-reviewer" not in str(short.value)


def test_bad_env_and_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        TokenAuth.from_env({"INTERLOCK_TOKENS": "{nope"})
    with pytest.raises(ConfigurationError, match="only one"):
        TokenAuth.from_env({"INTERLOCK_TOKENS": "{}", "INTERLOCK_TOKENS_FILE": "x"})
    with pytest.raises(ConfigurationError, match="Cannot read"):
        TokenAuth.from_file(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[[reviewers]\n")
    with pytest.raises(ConfigurationError, match="not valid"):
        TokenAuth.from_file(bad)


# -- loopback-only local mode -------------------------------------------------------------------


def test_loopback_helpers() -> None:
    for host in ("127.0.0.1", "127.3.4.5", "::1", "[::1]", "localhost", "LOCALHOST"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "10.0.0.1", "example.com", "192.168.1.2", ""):
        assert not is_loopback(host), host
    assert host_header_is_loopback("localhost:8000")
    assert host_header_is_loopback("[::1]:8000")
    assert host_header_is_loopback("127.0.0.1")
    assert not host_header_is_loopback("evil.example:8000")
    assert not host_header_is_loopback("127.0.0.1.evil.example")


def test_no_tokens_refuses_to_bind_beyond_loopback(agent: Agent) -> None:
    for host in ("0.0.0.0", "::", "192.168.1.10"):
        with pytest.raises(ConfigurationError, match="Refusing to listen"):
            check_bind(host, None)
        with pytest.raises(ConfigurationError, match="Refusing to listen"):
            build_server(agent, host=host, port=0, tokens=None)
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", TokenAuth.from_config(TOKENS))
    server = build_server(agent, host="0.0.0.0", port=0, tokens=TOKENS)
    assert server.config.host == "0.0.0.0"


@pytest.mark.anyio
async def test_local_mode_serves_only_loopback_clients_and_hosts(local: Server) -> None:
    r = await local.client.get("/api/me")
    assert r.json() == {"id": "local", "roles": [], "auth": False}
    outsider = httpx.AsyncClient(transport=httpx.ASGITransport(app=local.app,
                                                               client=("10.1.2.3", 4000)),
                                 base_url="http://127.0.0.1")
    async with outsider:
        r = await outsider.get("/api/threads")
        assert r.status_code == 403 and r.json()["error"] == "LoopbackOnly"
    # a DNS-rebinding page reaches 127.0.0.1 with its own host name
    r = await local.client.get("/api/threads", headers={"Host": "attacker.example:8000"})
    assert r.status_code == 403 and r.json()["error"] == "LoopbackOnly"


@pytest.mark.anyio
async def test_cross_origin_writes_are_refused(agent: Agent) -> None:
    async with running(agent, tokens=TOKENS) as s:
        r = await s.client.post("/api/threads", headers={**bearer(ALICE),
                                                         "Origin": "https://evil.example"},
                                json={"message": "hello"})
        assert r.status_code == 403 and r.json()["error"] == "CrossOriginRequest"
        r = await s.client.post("/api/threads", headers={**bearer(ALICE),
                                                         "Origin": "http://127.0.0.1"},
                                json={"message": "hello", "thread_id": "ok"}, params={"wait": 1})
        assert r.status_code == 200
    assert [t.thread_id for t in await agent.alist_threads()] == ["ok"]


def test_cli_refuses_a_public_bind_without_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from interlock.cli import main

    monkeypatch.delenv("INTERLOCK_TOKENS", raising=False)
    monkeypatch.delenv("INTERLOCK_TOKENS_FILE", raising=False)
    result = CliRunner().invoke(main, ["serve", "server.server_agents:make_agent",
                                       "--host", "0.0.0.0", "--port", "0"])
    assert result.exit_code == 2, result.output
    assert "Refusing to listen on '0.0.0.0' without reviewer tokens" in result.output



@pytest.mark.anyio
async def test_thread_detail_says_who_may_post_a_follow_up(secured: Server) -> None:
    """The inbox offers a follow-up message only to those interlock.authz.may_post allows:
    admins and the thread's creator, not every token."""
    await start(secured, "hello", "fu")  # alice's thread
    for token in (ALICE, ADMIN):
        r = await secured.client.get("/api/threads/fu", headers=bearer(token))
        assert r.status_code == 200, r.text
        assert r.json()["may_post"] is True, token
    for token in (BOB, CAROL):  # neither may read it, let alone post to it
        r = await secured.client.get("/api/threads/fu", headers=bearer(token))
        assert r.status_code == 403, r.text


@pytest.mark.anyio
async def test_local_reviewer_may_post_a_follow_up(local: Server) -> None:
    r = await local.client.post("/api/threads", params={"wait": "true"},
                                json={"message": "hello", "thread_id": "fu"})
    assert r.status_code == 200, r.text
    assert (await local.client.get("/api/threads/fu")).json()["may_post"] is True
