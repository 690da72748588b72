"""Slack against a local fake Web API: the request message, signed interactive callbacks
(checked with ``slack_sdk``'s verifier), user mapping, and message updates."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from slack_sdk.signature import SignatureVerifier

from interlock import Reviewer, SqliteCheckpointer
from interlock.notify import NotifyConfig
from server.live import LiveServer

from .agents import QUERY, escalating_agent, executions, make_agent
from .fakes import FakeSlack, fake_slack

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


def wait_for(check: Any, timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, ...]]:
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    store = SqliteCheckpointer(tmp_path / "db.sqlite")
    agent = make_agent(store)
    with fake_slack() as slack:
        config = NotifyConfig.model_validate({
            "public_url": "https://review.example.com",
            "slack": {"token": slack.token, "signing_secret": SIGNING_SECRET,
                      "channel": "#approvals", "channels": {"dba": "#dba"},
                      "api_url": slack.url},
            "reviewers": [{"id": "alice", "roles": ["dba"], "slack_user": "U_ALICE"},
                          {"id": "bob", "roles": ["ops"], "slack_user": "U_BOB"}],
            "dispatch": {"poll_interval": 0.05, "backoff": 0.05}})
        server = LiveServer(agent, notify=config)
        try:
            yield agent, slack, server
        finally:
            server.stop()


def signed(body: bytes, ts: int | None = None, secret: str = SIGNING_SECRET) -> dict[str, str]:
    ts = int(time.time()) if ts is None else ts
    sig = SignatureVerifier(secret).generate_signature(timestamp=str(ts), body=body)
    return {"x-slack-request-timestamp": str(ts), "x-slack-signature": sig,
            "content-type": "application/x-www-form-urlencoded"}


def click(button: dict[str, Any], user: str) -> bytes:
    payload = {"type": "block_actions", "user": {"id": user, "username": user},
               "channel": {"id": "CDBA"}, "actions": [button]}
    return urlencode({"payload": json.dumps(payload)}).encode()


def buttons(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]


def test_request_message_buttons_and_a_signed_approval(setup: tuple[Any, ...]) -> None:
    agent, slack, server = setup
    slack: FakeSlack
    assert agent.invoke("clean up", thread_id="t1").interrupted
    (posted,) = wait_for(lambda: slack.of("chat.postMessage"))
    assert posted["channel"] == "#dba"  # the role's channel
    shown = json.dumps(posted["blocks"], ensure_ascii=False)
    assert "⟨U+202E⟩" in shown and "\u202e" not in shown  # the bidi control is made visible
    assert "Hidden characters, shown as ⟨U+…⟩" in shown  # and the message warns about it
    assert "execute_sql" in shown
    btns = buttons(posted)
    assert sorted(b["text"]["text"] for b in btns) == ["Approve", "Reject"]
    approve = next(b for b in btns if b["text"]["text"] == "Approve")
    url = f"{server.url}/api/slack/interactions"

    # refused: a bad signature, an old timestamp, an unmapped user, a user without the role
    body = click(approve, "U_ALICE")
    bad = httpx.post(url, content=body, headers=signed(body, secret="another-secret-000000000"))
    assert bad.status_code == 401
    # malformed: no timestamp, a non-numeric one, no signature (a 500 before)
    good = signed(body)
    for header, value in (("x-slack-request-timestamp", None),
                          ("x-slack-request-timestamp", "soon"),
                          ("x-slack-signature", None)):
        headers = {k: v for k, v in good.items() if k != header}
        if value is not None:
            headers[header] = value
        malformed = httpx.post(url, content=body, headers=headers)
        assert malformed.status_code == 401, (header, value, malformed.text)
        assert malformed.json()["error"] == "InvalidSignature"
    old = httpx.post(url, content=body, headers=signed(body, ts=int(time.time()) - 600))
    assert old.status_code == 401
    stranger = click(approve, "U_STRANGER")
    assert httpx.post(url, content=stranger, headers=signed(stranger)).status_code == 200
    (refusal,) = wait_for(lambda: slack.of("chat.postEphemeral"))
    assert refusal["user"] == "U_STRANGER" and "not mapped" in refusal["text"]
    wrong_role = click(approve, "U_BOB")
    assert httpx.post(url, content=wrong_role, headers=signed(wrong_role)).status_code == 200
    second = wait_for(lambda: slack.of("chat.postEphemeral")[1:])
    assert second[0]["user"] == "U_BOB" and "dba" in second[0]["text"]
    assert executions() == []
    assert agent.get_thread("t1").status == "interrupted"
    assert not [a for a in agent.audit("t1") if a.kind == "decision"]

    # a mapped reviewer with the role: the call runs once, the message shows the outcome
    ok = httpx.post(url, content=body, headers=signed(body))
    assert ok.status_code == 200
    wait_for(lambda: agent.get_thread("t1").status == "completed")
    assert executions() == [QUERY]
    decision = next(a for a in agent.audit("t1") if a.kind == "decision")
    assert decision.actor == "alice"
    updates = wait_for(lambda: slack.of("chat.update"))
    assert updates[-1]["ts"] == "1700000001.000100"
    text = json.dumps(updates[-1]["blocks"])
    assert "approved by alice" in text and buttons(updates[-1]) == []

    # the same click again (freshly signed) changes nothing
    again = httpx.post(url, content=body, headers=signed(body))
    assert again.status_code == 200
    wait_for(lambda: len(slack.of("chat.postEphemeral")) == 3)
    assert executions() == [QUERY]


def test_a_decision_elsewhere_updates_the_slack_message(setup: tuple[Any, ...]) -> None:
    agent, slack, _ = setup
    agent.invoke("clean up", thread_id="t2")
    wait_for(lambda: slack.of("chat.postMessage"))
    agent.resume("t2", [{"type": "reject", "message": "not today"}],
                 reviewer=Reviewer("carol", frozenset({"dba"})))
    (update,) = wait_for(lambda: slack.of("chat.update"))
    text = json.dumps(update["blocks"])
    assert "rejected by carol: not today" in text
    assert buttons(update) == []
    assert executions() == []


def posted_and_updated(tmp_path: Path, description: str, query: str,
                       message: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Slack message of a request with ``description`` for ``execute_sql(query)``, and its
    update after carol rejects it with ``message``."""
    import asyncio

    from interlock import InterruptOn, ScriptedModel
    from interlock.notify import Dispatcher, build_channels

    agent = make_agent(
        SqliteCheckpointer(tmp_path / "db.sqlite"),
        InterruptOn(allowed_decisions=["approve", "reject"], description=description),
        model=ScriptedModel([{"name": "execute_sql", "args": {"query": query}}, "Done."]))
    with fake_slack() as slack:
        config = NotifyConfig.model_validate({"slack": {
            "token": slack.token, "signing_secret": SIGNING_SECRET, "channel": "#approvals",
            "api_url": slack.url}})
        dispatcher = Dispatcher(agent.checkpointer, build_channels(config, agent.checkpointer),
                                settings=config.dispatch)
        assert agent.invoke("clean up", thread_id="t-text").interrupted
        asyncio.run(dispatcher.run_once())
        agent.resume("t-text", [{"type": "reject", "message": message}],
                     reviewer=Reviewer("carol"))
        asyncio.run(dispatcher.run_once())
        (posted,) = slack.of("chat.postMessage")
        (update,) = slack.of("chat.update")
    return posted, update


def test_untrusted_text_cannot_become_a_mention_or_a_link(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Arguments, a description and a reviewer's message holding Slack's control sequences
    (<!channel>, <https://...|label>, <@U...>) are shown as text: &, < and > escaped in every
    mrkdwn field and in the message's text."""
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    trap = "<!channel> <https://evil.example|Approve here> <@U_ALICE> &amp;"
    posted, update = posted_and_updated(tmp_path, f"Check {trap}", f"SELECT '{trap}'",
                                        f"no {trap}")
    assert executions() == []
    for message in (posted, update):
        fields = [message["text"]] + [
            t["text"] for b in message["blocks"]
            for t in ([b["text"]] if "text" in b else []) + b.get("elements", [])
            if isinstance(t, dict) and t.get("type") == "mrkdwn"]
        shown = "\n".join(fields)
        assert "&lt;!channel&gt;" in shown and "&lt;https://evil.example|Approve here&gt;" in shown
        assert "&amp;amp;" in shown  # an ampersand of the text stays an ampersand
        # the only control sequence left is the inbox link interlock itself puts there
        assert [f for f in fields if "<" in f or ">" in f] == [
            f for f in fields if "|open in the inbox>" in f]
    # the description and the reviewer's message are plain text (nothing is parsed there)
    plain = [t["text"] for b in update["blocks"]
             for t in ([b["text"]] if "text" in b else []) + b.get("elements", [])
             if isinstance(t, dict) and t.get("type") == "plain_text"]
    assert f"Check {trap}" in plain and any(f"no {trap}" in t for t in plain)


def test_descriptions_and_messages_are_plain_text(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A description (and a reviewer's message) written to look like Slack formatting — a bold
    "APPROVED", a code block, a strike-through — is shown as the characters it is: it sits in
    a plain_text element, and no mrkdwn field carries it."""
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    fake = "*APPROVED by security* ```risk: none``` ~pending~ _safe_"
    posted, update = posted_and_updated(tmp_path, fake, "DROP TABLE x", fake)
    for message in (posted, update):
        elements = [t for b in message["blocks"]
                    for t in ([b["text"]] if "text" in b else []) + b.get("elements", [])
                    if isinstance(t, dict) and "text" in t]
        assert not [t for t in elements if t["type"] == "mrkdwn" and "APPROVED" in t["text"]]
        assert fake in [t["text"] for t in elements if t["type"] == "plain_text"]
    assert any(t["text"] == f"Status: rejected by carol: {fake}" for b in update["blocks"]
               for t in b.get("elements", []) if isinstance(t, dict) and "text" in t)
    assert executions() == []


def escalation_dispatcher(store: Any, slack: FakeSlack, now: list[Any]) -> Any:
    """A dispatcher on the clock ``now[0]`` posting to ``slack``: dba and on-call channels."""
    from interlock.notify import Dispatcher, build_channels

    config = NotifyConfig.model_validate({
        "slack": {"token": slack.token, "signing_secret": SIGNING_SECRET,
                  "channel": "#approvals", "api_url": slack.url,
                  "channels": {"dba": "#dba", "oncall": "#oncall"}}})
    return Dispatcher(store, build_channels(config, store), settings=config.dispatch,
                      clock=lambda: now[0])


def raise_and_escalate(agent: Any, dispatcher: Any, slack: FakeSlack, now: list[Any],
                       thread_id: str) -> list[dict[str, Any]]:
    """Raise a request, let 31 minutes pass and escalate it: posted in #dba, then #oncall."""
    import asyncio
    from datetime import timedelta

    agent.invoke("clean up", thread_id=thread_id)
    asyncio.run(dispatcher.run_once())
    now[0] += timedelta(minutes=31)
    agent.expire_due()
    asyncio.run(dispatcher.run_once())
    posts = slack.of("chat.postMessage")
    assert [p["channel"] for p in posts] == ["#dba", "#oncall"]
    assert "Escalated" in posts[1]["text"]
    return posts


def test_escalation_posts_to_the_escalation_roles_channel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fake clock: raised in the dba channel, escalated to the on-call channel (a new message
    naming the escalation), and both messages updated when the default outcome applies."""
    import asyncio
    from datetime import UTC, datetime, timedelta

    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    now = [datetime(2030, 1, 1, 9, 0, tzinfo=UTC)]
    store = SqliteCheckpointer(tmp_path / "db.sqlite")
    agent = escalating_agent(store, now)
    with fake_slack() as slack:
        dispatcher = escalation_dispatcher(store, slack, now)
        posts = raise_and_escalate(agent, dispatcher, slack, now, "e1")
        assert sorted(b["text"]["text"] for b in buttons(posts[1])) == [
            "Approve", "Edit in inbox…", "Reject", "Respond in inbox…"]
        now[0] += timedelta(minutes=30)
        agent.expire_due()
        asyncio.run(dispatcher.run_once())
        updated = slack.of("chat.update")
        assert len(updated) == 3  # the dba message at the escalation; both at the expiry
        assert {u["channel"] for u in updated[-2:]} == {"CDBA", "CONCALL"}
        assert all(buttons(u) == [] for u in updated[-2:])
        assert "expired" in json.dumps(updated[-1]["blocks"])
    asyncio.run(store.close())
