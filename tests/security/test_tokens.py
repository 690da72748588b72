"""Token handling: failed attempts are throttled (429), tokens expire, a changed token file is
read again without a restart, and writes from another origin (scheme, host or port) are
refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from interlock import Agent
from interlock.server import auth as auth_module
from interlock.server.auth import FailureThrottle
from interlock.server.security import same_origin
from server.conftest import ALICE, BOB, Server, bearer, running


@pytest.mark.anyio
async def test_a_retried_wrong_key_does_not_lock_out_good_keys(agent: Agent) -> None:
    """A browser app that retries a wrong key (Agent Inbox's page load made 10 requests) is
    throttled for that key only; the right key from the same address still works."""
    clock = [1000.0]
    async with running(agent, tokens={ALICE: {"id": "alice"}, BOB: {"id": "bob"}}) as s:
        s.app.state.interlock.throttle = FailureThrottle(5, 60, clock=lambda: clock[0])
        c = s.client
        wrong = bearer("stale-0123456789abcdef")
        for _ in range(5):
            assert (await c.get("/api/me", headers=wrong)).status_code == 401
        for _ in range(10):  # further retries are refused unchecked, and not counted
            r = await c.get("/api/me", headers=wrong)
            assert r.status_code == 429 and r.json()["error"] == "TooManyAttempts"
            assert "with this token" in r.json()["message"]
        assert int(r.headers["retry-after"]) == 60
        for good, who in ((ALICE, "alice"), (BOB, "bob")):
            r = await c.get("/api/me", headers=bearer(good))
            assert r.status_code == 200 and r.json()["id"] == who
        clock[0] += 61
        assert (await c.get("/api/me", headers=wrong)).status_code == 401


@pytest.mark.anyio
async def test_guessing_many_keys_blocks_the_address(agent: Agent) -> None:
    clock = [1000.0]
    async with running(agent, tokens={ALICE: {"id": "alice"}}) as s:
        s.app.state.interlock.throttle = FailureThrottle(5, 60, per_address=8,
                                                         clock=lambda: clock[0])
        c = s.client
        for n in range(8):
            r = await c.get("/api/me", headers=bearer(f"guess-{n:02d}-0123456789abcdef"))
            assert r.status_code == 401
        r = await c.get("/api/me", headers=bearer("guess-99-0123456789abcdef"))
        assert r.status_code == 429 and "from this address" in r.json()["message"]
        assert int(r.headers["retry-after"]) == 60
        # while the address is throttled even the right token is not checked
        r = await c.get("/api/me", headers=bearer(ALICE))
        assert r.status_code == 429
        clock[0] += 30
        assert int((await c.get("/api/me", headers=bearer(ALICE))).headers["retry-after"]) == 30
        clock[0] += 31
        r = await c.get("/api/me", headers=bearer(ALICE))
        assert r.status_code == 200 and r.json()["id"] == "alice"


def test_the_throttle_counts_only_recent_failures() -> None:
    clock = [0.0]
    t = FailureThrottle(3, 10, per_address=5, clock=lambda: clock[0])
    for _ in range(3):
        assert t.retry_after("10.0.0.1", "k1") is None
        t.failed("10.0.0.1", "k1")
    assert t.retry_after("10.0.0.1", "k1") == 10
    assert t.retry_after("10.0.0.3", "k1") == 10  # the key, from any address
    assert t.retry_after("10.0.0.1", "k2") is None  # another key from the same address
    t.failed("10.0.0.1", "k2")
    t.failed("10.0.0.1", "k3")
    assert t.retry_after("10.0.0.1", "k4") == 10  # five failures from the address
    assert t.retry_after("10.0.0.2", "k4") is None  # another address is not affected
    clock[0] = 10.0
    assert t.retry_after("10.0.0.1", "k1") is None


@pytest.mark.anyio
async def test_expired_tokens_are_refused(agent: Agent) -> None:
    tokens = {"reviewers": [
        {"id": "old", "token": ALICE, "expires": "2020-01-01T00:00:00Z"},
        {"id": "new", "token": BOB, "expires": "2999-01-01T00:00:00+00:00"},
    ]}
    async with running(agent, tokens=tokens) as s:
        r = await s.client.get("/api/me", headers=bearer(ALICE))
        assert r.status_code == 401 and "expired at 2020-01-01" in r.json()["message"]
        r = await s.client.post("/api/threads", headers=bearer(ALICE), json={"message": "hi"})
        assert r.status_code == 401
        assert await s.agent.alist_threads() == []
        assert (await s.client.get("/api/me", headers=bearer(BOB))).json()["id"] == "new"


@pytest.mark.anyio
async def test_a_changed_token_file_is_read_again(agent: Agent, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(auth_module, "RELOAD_CHECK_SECONDS", 0.0)
    path = tmp_path / "tokens.toml"
    path.write_text(f'[[reviewers]]\nid = "alice"\ntoken = "{ALICE}"\n')
    async with running(agent, tokens=path) as s:
        c = s.client
        assert (await c.get("/api/me", headers=bearer(ALICE))).status_code == 200
        assert (await c.get("/api/me", headers=bearer(BOB))).status_code == 401
        # rotate: bob in, alice out (no restart)
        path.write_text(f'[[reviewers]]\nid = "bob"\nroles = ["ops"]\ntoken = "{BOB}"\n')
        os.utime(path, ns=(1, 2_000_000_000))
        r = await c.get("/api/me", headers=bearer(BOB))
        assert r.status_code == 200 and r.json() == {"id": "bob", "roles": ["ops"], "auth": True}
        assert (await c.get("/api/me", headers=bearer(ALICE))).status_code == 401
        # a broken edit keeps the tokens in force and says why in the log
        path.write_text("[[reviewers]]\nid = 'x'\ntoken = 'short'\n")
        os.utime(path, ns=(1, 3_000_000_000))
        assert (await c.get("/api/me", headers=bearer(BOB))).status_code == 200


@pytest.mark.anyio
async def test_writes_from_another_scheme_host_or_port_are_refused(secured: Server) -> None:
    c = secured.client
    for origin in ("https://127.0.0.1", "http://127.0.0.1:8080", "http://evil.example",
                   "null", "http://127.0.0.1.evil.example", "http://user@127.0.0.1"):
        r = await c.post("/api/threads", headers={**bearer(ALICE), "Origin": origin},
                         json={"message": "hi", "thread_id": "o"})
        assert r.status_code == 403, origin
        assert r.json()["error"] == "CrossOriginRequest"
    assert await secured.agent.alist_threads() == []
    for n, origin in enumerate(("http://127.0.0.1", "http://127.0.0.1:80")):
        # one thread each: the first run may still be going on when the second post arrives
        r = await c.post("/api/threads", headers={**bearer(ALICE), "Origin": origin},
                         json={"message": "hi", "thread_id": f"o{n}"})
        assert r.status_code == 202, (origin, r.text)


def test_same_origin_compares_scheme_host_and_port() -> None:
    assert same_origin("https://review.example", "https", "review.example")
    assert same_origin("https://review.example:443", "https", "review.example")
    assert same_origin("http://[::1]:8000", "http", "[::1]:8000")
    assert not same_origin("http://review.example", "https", "review.example")
    assert not same_origin("https://review.example:8443", "https", "review.example")
    assert not same_origin("https://other.example", "https", "review.example")
