"""Notifications of a sub-agent's request (``Agent.as_tool``): announced once, under the
top-most thread where it is decided, with the path to the call; Slack buttons and e-mail links
decide it through that thread, by the sub-agent's rules (roles, quorum); escalation works the
same. Real parts: ``standardwebhooks`` verification, ``slack_sdk``'s signature against the
local fake Web API, ``aiosmtpd``."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from interlock import InterruptOn, Reviewer, SqliteCheckpointer
from interlock.notify import Dispatcher, NotifyConfig, build_channels
from server.live import LiveServer

from .agents import QUERY, executions, make_team
from .fakes import fake_slack, new_secret, smtp_server, webhook_receiver
from .test_email import LINK_SECRET, PUBLIC, LinkPage, body_of, link_token
from .test_slack import (
    SIGNING_SECRET,
    buttons,
    click,
    escalation_dispatcher,
    raise_and_escalate,
    signed,
    wait_for,
)

CHILD = "job-1@ask_sqlbot"
PEOPLE = [{"id": "alice", "roles": ["dba"], "email": "alice@example.com",
           "slack_user": "U_ALICE"},
          {"id": "bob", "roles": ["ops"], "email": "bob@example.com", "slack_user": "U_BOB"},
          {"id": "carol", "roles": ["dba"], "email": "carol@example.com"}]


@pytest.fixture(autouse=True)
def _runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))


def expected_path(agent: Any) -> list[dict[str, Any]]:
    (call,) = agent.journal(CHILD)
    return [{"thread_id": "job-1", "agent": "orchestrator", "tool_call_id": "ask_sqlbot",
             "tool_name": "sqlbot"},
            {"thread_id": CHILD, "agent": "sqlbot", "tool_call_id": call.tool_call_id,
             "tool_name": "execute_sql"}]


def completed(agent: Any, thread_id: str = "job-1") -> None:
    wait_for(lambda: agent.get_thread(thread_id).status == "completed")


def test_webhook_announces_a_sub_agents_request_once_under_the_parent(tmp_path: Path) -> None:
    secret = new_secret()
    store = SqliteCheckpointer(tmp_path / "db.sqlite")
    agent = make_team(store)
    with webhook_receiver(secret) as rx:
        config = NotifyConfig.model_validate({
            "public_url": PUBLIC, "webhooks": [{"name": "ops", "url": rx.url,
                                                "secret": secret}]})
        dispatcher = Dispatcher(store, build_channels(config, store), settings=config.dispatch)
        result = agent.invoke("tidy up", thread_id="job-1")
        [request] = result.interrupts
        asyncio.run(dispatcher.run_once())
        assert all(r.verified for r in rx.received)
        (raised,) = rx.accepted
        assert raised["type"] == "request.raised"
        data = raised["data"]
        assert data["thread_id"] == "job-1" and data["subagent_thread_id"] == CHILD
        assert data["interrupt_id"] == request.id
        assert data["url"] == f"{PUBLIC}/#/t/job-1"
        assert data["api_url"] == f"{PUBLIC}/api/threads/job-1"
        (call,) = data["calls"]
        assert call["name"] == "execute_sql" and call["args"] == {"query": QUERY}
        assert call["reviewers"] == ["dba"]
        assert call["path"] == expected_path(agent)

        agent.resume("job-1", [{"type": "approve"}], interrupt_id=request.id,
                     reviewer=Reviewer("alice", frozenset({"dba"})))
        asyncio.run(dispatcher.run_once())
        assert [e["type"] for e in rx.accepted] == ["request.raised", "request.decided"]
        decided = rx.accepted[1]["data"]
        assert decided["thread_id"] == "job-1" and decided["pending"] is False
        assert decided["calls"][0]["state"] == "approved"
        assert decided["calls"][0]["decided_by"] == "alice"
        assert executions() == [QUERY]
        assert agent.get_thread("job-1").status == "completed"

        # cancelling a parent whose sub-agent waits: one event, from the sub-agent's thread
        agent.invoke("tidy up", thread_id="job-2")
        agent.cancel("job-2")
        asyncio.run(dispatcher.run_once())
        assert [(e["type"], e["data"]["thread_id"], e["data"]["subagent_thread_id"])
                for e in rx.accepted[2:]] == [
            ("request.raised", "job-2", "job-2@ask_sqlbot"),
            ("request.cancelled", "job-2", "job-2@ask_sqlbot")]
    events = asyncio.run(store.outbox_list(limit=100))
    assert len(events) == 4 and {e.thread_id for e in events} == {"job-1", "job-2"}
    assert executions() == [QUERY]
    asyncio.run(store.close())


@contextmanager
def serving(agent: Any, settings: dict[str, Any]) -> Iterator[LiveServer]:
    """``agent`` behind a live server notifying PEOPLE through ``settings``' channel."""
    config = NotifyConfig.model_validate({
        "public_url": PUBLIC, **settings, "reviewers": PEOPLE,
        "dispatch": {"poll_interval": 0.05, "backoff": 0.05}})
    server = LiveServer(agent, notify=config)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def slack_team(tmp_path: Path) -> Iterator[tuple[Any, ...]]:
    agent = make_team(SqliteCheckpointer(tmp_path / "db.sqlite"))
    with fake_slack() as slack, serving(agent, {"slack": {
            "token": slack.token, "signing_secret": SIGNING_SECRET, "channel": "#approvals",
            "channels": {"dba": "#dba"}, "api_url": slack.url}}) as server:
        yield agent, slack, server


def test_slack_button_decides_a_sub_agents_request_through_the_parent(
        slack_team: tuple[Any, ...]) -> None:
    agent, slack, server = slack_team
    assert agent.invoke("tidy up", thread_id="job-1").interrupted
    (posted,) = wait_for(lambda: slack.of("chat.postMessage"))
    assert posted["channel"] == "#dba"  # the sub-agent's role decides where it goes
    shown = json.dumps(posted["blocks"], ensure_ascii=False)
    assert "Thread `job-1`" in shown
    (call,) = agent.journal(CHILD)
    path_line = next(e["text"] for b in posted["blocks"] if b["type"] == "context"
                     for e in b["elements"] if e["text"].startswith("Path: "))
    assert path_line == (f"Path: orchestrator: sqlbot (ask_sqlbot) › sqlbot: execute_sql "
                         f"({call.tool_call_id})")
    assert f"Raised in sub-agent thread {CHILD}; decided on thread job-1" in shown
    assert "⟨U+202E⟩" in shown and "\u202e" not in shown  # the arguments' display rules
    approve = next(b for b in buttons(posted) if b["text"]["text"] == "Approve")
    assert json.loads(approve["value"])["t"] == "job-1"
    url = f"{server.url}/api/slack/interactions"

    # bob lacks the sub-agent's role: refused by the sub-agent's rules, nothing runs
    wrong = click(approve, "U_BOB")
    assert httpx.post(url, content=wrong, headers=signed(wrong)).status_code == 200
    (refusal,) = wait_for(lambda: slack.of("chat.postEphemeral"))
    assert refusal["user"] == "U_BOB" and "dba" in refusal["text"]
    assert executions() == []
    assert agent.get_thread("job-1").status == "interrupted"

    body = click(approve, "U_ALICE")
    assert httpx.post(url, content=body, headers=signed(body)).status_code == 200
    completed(agent)
    assert agent.get_thread("job-1").interrupts == []
    assert executions() == [QUERY]
    assert agent.get_thread("job-1").messages[-1].content == "done: sqlbot: 1 row deleted"
    (decision,) = [a for a in agent.audit(CHILD) if a.kind == "decision"]
    assert decision.actor == "alice" and decision.data.get("via_thread_id") == "job-1"
    updates = wait_for(lambda: slack.of("chat.update"))
    assert "approved by alice" in json.dumps(updates[-1]["blocks"])
    assert buttons(updates[-1]) == []

    again = httpx.post(url, content=body, headers=signed(body))  # a second click: nothing
    assert again.status_code == 200
    wait_for(lambda: len(slack.of("chat.postEphemeral")) == 2)
    assert executions() == [QUERY]
    assert len(slack.of("chat.postMessage")) == 1  # one message for the request, ever


@pytest.fixture
def mail_team(tmp_path: Path) -> Iterator[tuple[Any, ...]]:
    agent = make_team(SqliteCheckpointer(tmp_path / "db.sqlite"),
                      InterruptOn(allowed_decisions=["approve", "reject"], reviewers=["dba"],
                                  approvals=2))
    with smtp_server() as box, serving(agent, {"email": {
            "host": "127.0.0.1", "port": box.port, "from": "interlock@example.com",
            "link_secret": LINK_SECRET}}) as server:
        yield agent, box, server


def test_email_links_decide_a_sub_agents_quorum_request_through_the_parent(
        mail_team: tuple[Any, ...]) -> None:
    from interlock.notify.email import Link, LinkSigner, call_digest

    agent, box, server = mail_team
    result = agent.invoke("tidy up", thread_id="job-1")
    [request] = result.interrupts
    msgs = box.wait(2)
    time.sleep(0.3)
    assert sorted(m["To"] for m in box.messages) == ["alice@example.com", "carol@example.com"]
    links = {}
    for m in msgs:
        text = body_of(m)
        assert "(thread job-1)" in m["Subject"]
        assert "Path: orchestrator: sqlbot (ask_sqlbot) › sqlbot: execute_sql" in text
        assert f"Raised in sub-agent thread {CHILD}; decided on thread job-1" in text
        assert f"Inbox: {PUBLIC}/#/t/job-1" in text
        links[m["To"].split("@")[0]] = LinkPage(server, link_token(text))

    page = links["alice"].open()
    assert page.status_code == 200
    shown = page.json()
    assert shown["path"][0].startswith(
        "Path: orchestrator: sqlbot (ask_sqlbot) › sqlbot: execute_sql")
    assert shown["thread"] == "job-1" and shown["approved_by"] == []
    assert shown["approvals_required"] == 2

    # a link made for bob (no dba role) is refused by the sub-agent's rules
    call = agent.get_thread("job-1").interrupts[0].value.action_requests[0]
    forged = LinkSigner(LINK_SECRET).make(Link(
        "job-1", request.id, call.tool_call_id, "bob", call_digest(call.name, call.args),
        time.time() + 600))
    refused = LinkPage(server, forged).decide("approve")
    assert refused.status_code in (403, 409) and "dba" in refused.json()["message"]
    assert executions() == []

    first = links["alice"].decide("approve")
    assert first.status_code == 200 and "You approved the call" in first.json()["message"]
    # the quorum is the sub-agent's: one approval records, nothing runs yet
    again = links["alice"].open()
    assert again.status_code == 410 and "already approved" in again.json()["message"]
    assert links["carol"].open().json()["approved_by"] == ["alice"]
    assert executions() == []
    assert agent.get_thread("job-1").status == "interrupted"

    second = links["carol"].decide("approve")
    assert second.status_code == 200
    completed(agent)
    assert executions() == [QUERY]
    assert agent.get_thread("job-1").messages[-1].content == "done: sqlbot: 1 row deleted"
    assert [a.actor for a in agent.audit(CHILD) if a.kind == "approval_recorded"] == ["alice"]
    assert [a.actor for a in agent.audit(CHILD) if a.kind == "decision"] == ["carol"]
    assert links["carol"].decide("approve").status_code in (409, 410)
    assert executions() == [QUERY]


def test_a_sub_agents_request_escalates_under_the_parent(tmp_path: Path) -> None:
    now = [datetime(2030, 1, 1, 9, 0, tzinfo=UTC)]
    store = SqliteCheckpointer(tmp_path / "db.sqlite")
    agent = make_team(store, InterruptOn(
        reviewers=["dba"], escalate_to=["oncall"], escalate_after=timedelta(minutes=30),
        expires_after=timedelta(hours=1)), clock=lambda: now[0])
    with fake_slack() as slack:
        dispatcher = escalation_dispatcher(store, slack, now)
        posts = raise_and_escalate(agent, dispatcher, slack, now, "job-1")
        assert all("Thread `job-1`" in json.dumps(p["blocks"]) for p in posts)
        assert all(json.loads(b["value"])["t"] == "job-1"
                   for p in posts for b in buttons(p) if "value" in b)
        now[0] += timedelta(minutes=30)
        agent.expire_due()
        asyncio.run(dispatcher.run_once())
        assert "expired" in json.dumps(slack.of("chat.update")[-1]["blocks"])
    events = asyncio.run(store.outbox_list(limit=100))
    assert [(e.type, e.thread_id) for e in events] == [
        ("request.raised", "job-1"), ("request.escalated", "job-1"),
        ("request.expired", "job-1")]
    assert agent.get_thread("job-1").status == "completed" and executions() == []
    asyncio.run(store.close())
