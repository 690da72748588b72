"""E-mail against a real SMTP server (``aiosmtpd``): the message, its signed link (the token in
the URL's fragment), the confirmation page (opening never decides; in Chromium too), a POST
that approves once, refused reuse and expiry."""

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
from server.live import CHROMIUM_ARGS, LiveServer, chromium_path

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


def link_token(text: str) -> str:
    """The token of the one decision link in a message: in the fragment, not the path."""
    (token,) = re.findall(r"https?://\S+/notify/email#(\S+)", text)
    return str(token)


class LinkPage:
    """What the confirmation page's script does, with real requests: the page (the browser
    sends no fragment), then the token in a JSON body."""

    def __init__(self, server: LiveServer | str, token: str) -> None:
        self.base = server if isinstance(server, str) else server.url
        self.token = token

    def open(self) -> httpx.Response:
        page = httpx.get(f"{self.base}/notify/email")
        assert page.status_code == 200 and "link.js" in page.text
        return httpx.post(f"{self.base}/notify/email/view", json={"token": self.token},
                          headers={"origin": self.base})

    def decide(self, decision: str, message: str | None = None) -> httpx.Response:
        return httpx.post(f"{self.base}/notify/email/decide",
                          json={"token": self.token, "decision": decision, "message": message},
                          headers={"origin": self.base})


def test_link_get_shows_post_decides_once(setup: tuple[Any, ...]) -> None:
    agent, box, server = setup
    box: Mailbox
    assert agent.invoke("clean up", thread_id="t1").interrupted
    box.wait(1)
    # a marker: a later request, mailed after every mail of the first (one dispatcher hands
    # out the events in order), so whatever t1 caused arrived before it
    assert agent.invoke("clean up", thread_id="marker").interrupted
    msg, marker = box.wait(2, timeout=60)
    assert len(box.messages) == 2  # only the reviewer holding the role, once per request
    assert "(thread t1)" in msg["Subject"] and "(thread marker)" in marker["Subject"]
    assert msg["To"] == "alice@example.com"
    text = body_of(msg)
    assert "⟨U+202E⟩" in text and "\u202e" not in text
    assert "Warning: Hidden characters, shown as ⟨U+…⟩" in text
    (url,) = re.findall(r"https?://\S+/notify/email#\S+", text)
    assert url.startswith(f"{PUBLIC}/notify/email#")
    link = LinkPage(server, link_token(text))

    view = link.open()
    assert view.status_code == 200
    shown = view.json()
    assert shown["title"] == "Confirm your decision" and shown["tool"] == "execute_sql"
    assert shown["decisions"] == ["approve", "reject"] and shown["reviewer"] == "alice"
    assert "⟨U+202E⟩" in shown["args"] and "\u202e" not in view.text
    assert any("Hidden characters" in w for w in shown["warnings"])
    link.open()  # opening it twice (mail scanners do) decides nothing either
    assert agent.get_thread("t1").status == "interrupted"
    assert executions() == []
    assert not [a for a in agent.audit("t1") if a.kind == "decision"]

    done = link.decide("approve")
    assert done.status_code == 200 and "You approved the call" in done.json()["message"]
    deadline = time.monotonic() + 15
    while agent.get_thread("t1").status != "completed" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert executions() == [QUERY]
    (decision,) = [a for a in agent.audit("t1") if a.kind == "decision"]
    assert decision.actor == "alice" and decision.data["type"] == "approve"

    again = link.decide("approve")
    assert again.status_code in (409, 410) and "cannot be used" in again.json()["title"]
    assert link.open().status_code in (409, 410)
    assert executions() == [QUERY]


def test_expired_and_forged_links_are_refused(setup: tuple[Any, ...]) -> None:
    agent, box, server = setup
    agent.invoke("clean up", thread_id="t2")
    (msg,) = box.wait(1)
    token = link_token(body_of(msg))
    thread = agent.get_thread("t2")
    iid = thread.interrupts[0].id
    call = thread.interrupts[0].value.action_requests[0]
    from interlock.notify.email import call_digest

    expired = LinkSigner(LINK_SECRET).make(Link("t2", iid, call.tool_call_id, "alice",
                                                call_digest(call.name, call.args),
                                                time.time() - 1))
    for bad in (expired, token[:-3] + "xyz"):
        link = LinkPage(server, bad)
        assert link.open().status_code == 410
        assert link.decide("approve").status_code == 410
    assert "expired" in LinkPage(server, expired).open().json()["message"]
    assert agent.get_thread("t2").status == "interrupted"
    assert executions() == []


@pytest.mark.browser
def test_the_link_page_approves_in_a_browser(setup: tuple[Any, ...]) -> None:
    agent, box, server = setup
    assert agent.invoke("clean up", thread_id="t1").interrupted
    (msg,) = box.wait(1)
    (url,) = re.findall(r"https?://\S+/notify/email#\S+", body_of(msg))
    import playwright.sync_api as playwright_api
    from playwright.sync_api import expect

    errors: list[str] = []
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error"
                    and "Failed to load resource" not in m.text else None)
            page.on("response", lambda r: errors.append(f"{r.status} {r.url}")
                    if r.status >= 400 and not r.url.endswith("/favicon.ico") else None)
            page.goto(server.url + url[len(PUBLIC):])
            expect(page.locator("h1")).to_have_text("Confirm your decision", timeout=15000)
            expect(page.locator("main b").nth(1)).to_have_text("execute_sql")
            expect(page.locator("pre")).to_contain_text("⟨U+202E⟩")
            expect(page.locator(".notice")).to_contain_text("Hidden characters")
            assert executions() == []
            page.get_by_role("button", name="Approve").click()
            expect(page.locator("h1")).to_have_text("Thank you", timeout=15000)
            expect(page.locator("main")).to_contain_text("You approved the call")
        finally:
            browser.close()
    deadline = time.monotonic() + 15
    while agent.get_thread("t1").status != "completed" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert executions() == [QUERY]
    (decision,) = [a for a in agent.audit("t1") if a.kind == "decision"]
    assert decision.actor == "alice"
    assert errors == [], errors


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
