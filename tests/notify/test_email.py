"""E-mail against a real SMTP server (``aiosmtpd``): the message, its signed link's
confirmation page (GET never decides), a POST that approves once, refused reuse and expiry."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from email.message import Message
from pathlib import Path
from typing import Any

import httpx
import pytest

from interlock import SqliteCheckpointer
from interlock.notify import NotifyConfig
from interlock.notify.email import Link, LinkSigner
from server.live import LiveServer

from .agents import QUERY, escalating_agent, executions, make_agent
from .fakes import Mailbox, smtp_server

PUBLIC = "https://review.example.com"
LINK_SECRET = "a-link-secret-of-enough-length"


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, ...]]:
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    agent = make_agent(SqliteCheckpointer(tmp_path / "db.sqlite"))
    with smtp_server() as box:
        config = NotifyConfig.model_validate({
            "public_url": PUBLIC,
            "email": {"host": "127.0.0.1", "port": box.port, "from": "interlock@example.com",
                      "link_secret": LINK_SECRET},
            "reviewers": [{"id": "alice", "roles": ["dba"], "email": "alice@example.com"},
                          {"id": "bob", "roles": ["ops"], "email": "bob@example.com"}],
            "dispatch": {"poll_interval": 0.05, "backoff": 0.05}})
        server = LiveServer(agent, notify=config)
        try:
            yield agent, box, server
        finally:
            server.stop()


def body_of(msg: Message) -> str:
    payload = msg.get_payload(decode=True)
    assert isinstance(payload, bytes)
    return payload.decode(msg.get_content_charset() or "utf-8")


def local(url: str, server: LiveServer) -> str:
    assert url.startswith(PUBLIC)
    return server.url + url[len(PUBLIC):]


def test_link_get_shows_post_decides_once(setup: tuple[Any, ...]) -> None:
    agent, box, server = setup
    box: Mailbox
    assert agent.invoke("clean up", thread_id="t1").interrupted
    (msg,) = box.wait(1)
    time.sleep(0.3)
    assert len(box.messages) == 1  # only the reviewer holding the role
    assert msg["To"] == "alice@example.com"
    text = body_of(msg)
    assert "⟨U+202E⟩" in text and "\u202e" not in text
    assert "Warning: Hidden characters, shown as ⟨U+…⟩" in text
    (url,) = re.findall(r"https?://\S+/notify/email/\S+", text)
    link = local(url, server)
    origin = {"origin": server.url}

    page = httpx.get(link)
    assert page.status_code == 200
    assert "Confirm your decision" in page.text and "execute_sql" in page.text
    assert "<form method='post'>" in page.text
    assert "⟨U+202E⟩" in page.text and "\u202e" not in page.text
    assert "Hidden characters" in page.text
    httpx.get(link)  # opening it twice (mail scanners do) decides nothing either
    assert agent.get_thread("t1").status == "interrupted"
    assert executions() == []
    assert not [a for a in agent.audit("t1") if a.kind == "decision"]

    done = httpx.post(link, data={"decision": "approve"}, headers=origin)
    assert done.status_code == 200 and "You approved the call" in done.text
    deadline = time.monotonic() + 15
    while agent.get_thread("t1").status != "completed" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert executions() == [QUERY]
    (decision,) = [a for a in agent.audit("t1") if a.kind == "decision"]
    assert decision.actor == "alice" and decision.data["type"] == "approve"

    again = httpx.post(link, data={"decision": "approve"}, headers=origin)
    assert again.status_code in (409, 410) and "cannot be used" in again.text
    assert httpx.get(link).status_code in (409, 410)
    assert executions() == [QUERY]


def test_expired_and_forged_links_are_refused(setup: tuple[Any, ...]) -> None:
    agent, box, server = setup
    agent.invoke("clean up", thread_id="t2")
    (msg,) = box.wait(1)
    (url,) = re.findall(r"https?://\S+/notify/email/(\S+)", body_of(msg))
    thread = agent.get_thread("t2")
    iid = thread.interrupts[0].id
    call = thread.interrupts[0].value.action_requests[0]
    from interlock.notify.email import call_digest

    expired = LinkSigner(LINK_SECRET).make(Link("t2", iid, call.tool_call_id, "alice",
                                                call_digest(call.name, call.args),
                                                time.time() - 1))
    for token in (expired, url[:-3] + "xyz"):
        link = f"{server.url}/notify/email/{token}"
        assert httpx.get(link).status_code == 410
        refused = httpx.post(link, data={"decision": "approve"}, headers={"origin": server.url})
        assert refused.status_code == 410
    assert "expired" in httpx.get(f"{server.url}/notify/email/{expired}").text
    assert agent.get_thread("t2").status == "interrupted"
    assert executions() == []


def test_escalation_mails_the_second_role_before_the_default_applies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fake clock: the dba is mailed when the request is raised, the on-call role at
    escalate_after, and the default outcome applies at expires_after; both are audited."""
    import asyncio
    from datetime import UTC, datetime, timedelta

    from interlock.notify import Dispatcher, build_channels

    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    now = [datetime(2030, 1, 1, 9, 0, tzinfo=UTC)]
    store = SqliteCheckpointer(tmp_path / "db.sqlite")
    agent = escalating_agent(store, now)
    with smtp_server() as box:
        config = NotifyConfig.model_validate({
            "email": {"host": "127.0.0.1", "port": box.port, "from": "interlock@example.com",
                      "link_secret": LINK_SECRET},
            "reviewers": [{"id": "alice", "roles": ["dba"], "email": "alice@example.com"},
                          {"id": "dave", "roles": ["oncall"], "email": "dave@example.com"}]})
        dispatcher = Dispatcher(store, build_channels(config, store), settings=config.dispatch,
                                clock=lambda: now[0])
        agent.invoke("clean up", thread_id="t3")
        asyncio.run(dispatcher.run_once())
        assert [m["To"] for m in box.wait(1)] == ["alice@example.com"]
        now[0] += timedelta(minutes=31)
        agent.expire_due()
        asyncio.run(dispatcher.run_once())
        msgs = box.wait(2)
        assert [m["To"] for m in msgs] == ["alice@example.com", "dave@example.com"]
        assert msgs[1]["Subject"].startswith("[escalated]")
        assert "escalated to you" in body_of(msgs[1])
        now[0] += timedelta(minutes=30)
        agent.expire_due()
        asyncio.run(dispatcher.run_once())
        time.sleep(0.2)
        assert len(box.messages) == 2  # expiry is not mailed (not pending any more)
    audit = [(a.kind, a.actor, a.ts) for a in agent.audit("t3")
             if a.kind in ("escalated", "expired")]
    assert audit == [
        ("escalated", "system:escalation", datetime(2030, 1, 1, 9, 31, tzinfo=UTC)),
        ("expired", "system:expiry", datetime(2030, 1, 1, 10, 1, tzinfo=UTC))]
    assert agent.get_thread("t3").status == "completed" and executions() == []
    asyncio.run(store.close())
