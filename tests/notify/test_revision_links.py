"""Slack buttons and e-mail links decide only the revision of the call their message showed:
after a colleague's edit the old button and link are refused and store nothing; a decision
through them records the revision it was for in the audit row. (No new message is sent for an
edited call: the edit's reviewers decide revision 2 in the inbox or the API.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from interlock import Reviewer, SqliteCheckpointer
from interlock.notify import NotifyConfig
from interlock.notify.email import call_digest
from security.revision_agent import make_agent, proposal
from server.live import LiveServer

from .agents import executions
from .fakes import fake_slack, smtp_server
from .test_email import LINK_SECRET, PUBLIC, LinkPage, body_of, link_token
from .test_slack import SIGNING_SECRET, buttons, click, signed, wait_for

GINA = Reviewer("gina", frozenset({"finance"}))
OFFSHORE = {"account": "offshore-9", "amount": 90000}


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, ...]]:
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    agent = make_agent(SqliteCheckpointer(tmp_path / "db.sqlite"))
    with fake_slack() as slack, smtp_server() as box:
        config = NotifyConfig.model_validate({
            "public_url": PUBLIC,
            "slack": {"token": slack.token, "signing_secret": SIGNING_SECRET,
                      "channel": "#approvals", "api_url": slack.url},
            "email": {"host": "127.0.0.1", "port": box.port, "from": "interlock@example.com",
                      "link_secret": LINK_SECRET},
            "reviewers": [{"id": "frank", "roles": ["finance"], "slack_user": "U_FRANK",
                           "email": "frank@example.com"}],
            "dispatch": {"poll_interval": 0.05, "backoff": 0.05}})
        server = LiveServer(agent, notify=config)
        try:
            yield agent, slack, box, server
        finally:
            server.stop()


def edited_by_gina(agent: Any, tid: str) -> int:
    agent.resume(tid, [{"type": "edit", "edited_action": {"name": "pay", "args": OFFSHORE}}],
                 reviewer=GINA)
    return len(agent.audit(tid))


def test_slack_button_of_an_earlier_revision_is_refused(served: tuple[Any, ...]) -> None:
    agent, slack, _, server = served
    agent.invoke(proposal("pay", account="acme", amount=100), thread_id="s")
    (posted,) = wait_for(lambda: slack.of("chat.postMessage"))
    approve = next(b for b in buttons(posted) if b["text"]["text"] == "Approve")
    rows = edited_by_gina(agent, "s")
    url = f"{server.url}/api/slack/interactions"
    body = click(approve, "U_FRANK")
    assert httpx.post(url, content=body, headers=signed(body)).status_code == 200
    (said,) = wait_for(lambda: slack.of("chat.postEphemeral"))
    assert said["user"] == "U_FRANK" and "edited" in said["text"]
    assert executions() == [] and len(agent.audit("s")) == rows
    # a button for what would run now (as a message about revision 2 carries it)
    value = {**json.loads(approve["value"]), "d": call_digest("pay", OFFSHORE)}
    body = click({**approve, "value": json.dumps(value)}, "U_FRANK")
    assert httpx.post(url, content=body, headers=signed(body)).status_code == 200
    wait_for(lambda: agent.get_thread("s").status == "completed")
    assert executions() == ["pay offshore-9 90000"]
    (row,) = [a for a in agent.audit("s") if a.kind == "decision"]
    assert (row.actor, row.data["revision"]) == ("frank", 2)


def test_email_link_of_an_earlier_revision_is_refused(served: tuple[Any, ...]) -> None:
    agent, _, box, server = served
    agent.invoke(proposal("pay", account="acme", amount=100), thread_id="m")
    (msg,) = box.wait(1)
    link = LinkPage(server, link_token(body_of(msg)))
    rows = edited_by_gina(agent, "m")
    page = link.open()
    assert page.status_code == 409 and "edited" in page.text
    done = link.decide("approve")
    assert done.status_code == 409 and "edited" in done.text
    assert executions() == [] and len(agent.audit("m")) == rows
    assert agent.get_thread("m").interrupts[0].value.review_configs[0].revision == 2
