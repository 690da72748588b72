"""Slack buttons and e-mail links decide only the revision of the call their message showed:
after a colleague's edit the old button and link are refused and store nothing; a decision
through them records the revision it was for in the audit row. (No new message is sent for an
edited call: the edit's reviewers decide revision 2 in the inbox or the API.) A call edited away
and back again (revision 3 with the tool and arguments of revision 1) is not the revision the
message showed either: its old button and link are refused too."""

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
ACME = {"account": "acme", "amount": 100}


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


def edited_by_gina(agent: Any, tid: str, args: dict[str, Any] = OFFSHORE,
                   revision: int = 1) -> int:
    agent.resume(tid, [{"type": "edit", "edited_action": {"name": "pay", "args": args},
                        "revision": revision}], reviewer=GINA)
    return len(agent.audit(tid))


def edited_away_and_back(agent: Any, tid: str) -> int:
    """revision 2 pays offshore, revision 3 is the model's proposal again, word for word"""
    edited_by_gina(agent, tid)
    rows = edited_by_gina(agent, tid, ACME, revision=2)
    (config,) = agent.get_thread(tid).interrupts[0].value.review_configs
    assert (config.revision, config.edited_by) == (3, "gina")
    return rows


# (how the call was edited after the message was sent, the revision and arguments it has now)
EDITS = [pytest.param(edited_by_gina, 2, OFFSHORE, id="edited"),
         pytest.param(edited_away_and_back, 3, ACME, id="edited-away-and-back")]


@pytest.mark.parametrize(("edit", "revision", "args"), EDITS)
def test_slack_button_of_an_earlier_revision_is_refused(
        served: tuple[Any, ...], edit: Any, revision: int, args: dict[str, Any]) -> None:
    agent, slack, _, server = served
    agent.invoke(proposal("pay", **ACME), thread_id="s")
    (posted,) = wait_for(lambda: slack.of("chat.postMessage"))
    approve = next(b for b in buttons(posted) if b["text"]["text"] == "Approve")
    rows = edit(agent, "s")
    url = f"{server.url}/api/slack/interactions"
    body = click(approve, "U_FRANK")
    assert httpx.post(url, content=body, headers=signed(body)).status_code == 200
    (said,) = wait_for(lambda: slack.of("chat.postEphemeral"))
    assert said["user"] == "U_FRANK" and "edited" in said["text"]
    assert executions() == [] and len(agent.audit("s")) == rows
    (config,) = agent.get_thread("s").interrupts[0].value.review_configs
    assert config.revision == revision and [a.by for a in config.approved_by or []] == ["gina"]
    # a button for what would run now (as a message about that revision carries it)
    value = {**json.loads(approve["value"]), "d": call_digest("pay", args, revision)}
    body = click({**approve, "value": json.dumps(value)}, "U_FRANK")
    assert httpx.post(url, content=body, headers=signed(body)).status_code == 200
    wait_for(lambda: agent.get_thread("s").status == "completed")
    assert executions() == [f"pay {args['account']} {args['amount']}"]
    (row,) = [a for a in agent.audit("s") if a.kind == "decision"]
    assert (row.actor, row.data["revision"]) == ("frank", revision)


@pytest.mark.parametrize(("edit", "revision", "args"), EDITS)
def test_email_link_of_an_earlier_revision_is_refused(
        served: tuple[Any, ...], edit: Any, revision: int, args: dict[str, Any]) -> None:
    agent, _, box, server = served
    agent.invoke(proposal("pay", **ACME), thread_id="m")
    (msg,) = box.wait(1)
    link = LinkPage(server, link_token(body_of(msg)))
    rows = edit(agent, "m")
    page = link.open()
    assert page.status_code == 409 and "edited" in page.text
    done = link.decide("approve")
    assert done.status_code == 409 and "edited" in done.text
    assert executions() == [] and len(agent.audit("m")) == rows
    request = agent.get_thread("m").interrupts[0].value
    (config,), (action,) = request.review_configs, request.action_requests
    assert (config.revision, action.args) == (revision, args)
    assert [a.by for a in config.approved_by or []] == ["gina"]


def test_links_and_buttons_sent_before_revisions_were_named_stand_for_revision_1() -> None:
    """A message sent by an earlier version carries the digest of the tool and arguments
    alone: it decides revision 1 of the call, and no later revision, whatever its arguments."""
    from interlock.notify.email import shown_digests

    args = ACME
    legacy = call_digest("pay", args)
    assert legacy in shown_digests("pay", args, 1)
    assert legacy not in shown_digests("pay", args, 3)
    assert call_digest("pay", args, 1) in shown_digests("pay", args, 1)
    assert call_digest("pay", args, 1) not in shown_digests("pay", args, 3)
    assert call_digest("pay", args, 3) in shown_digests("pay", args, 3)
