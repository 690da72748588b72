"""One identity for every surface: reviewer ids are compared normalised (NFKC, without
characters that show as nothing, case-folded), so ids that collide are refused when tokens or notification reviewers are loaded and a quorum
counts ``alice`` and ``Alice`` once; an expired or removed token stops deciding through Slack
and e-mail links too, not only through the API."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interlock import (
    ConfigurationError,
    InterruptOn,
    InvalidDecision,
    NotAuthorized,
    Reviewer,
    SqliteCheckpointer,
)
from interlock.authz import is_reserved, same_reviewer
from interlock.notify import NotifyConfig, load_config
from interlock.notify.email import Link, LinkSigner, call_digest
from interlock.server import create_app
from interlock.server.auth import TokenAuth
from notify.agents import QUERY, executions, make_agent
from notify.fakes import FakeSlack, fake_slack
from notify.test_email import LINK_SECRET, LinkPage
from notify.test_slack import SIGNING_SECRET, click, signed, wait_for
from server.live import LiveServer

TOKEN_A = "alice-token-0123456789abcdef"
TOKEN_B = "bob-token-0123456789abcdef"


def tokens(*entries: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"reviewers": [{"id": rid, "token": tok, "roles": ["dba"], **extra}
                          for rid, tok, extra in entries]}


INVISIBLE = ["\u200b", "\u00ad", "\u2060", "\ufeff", "\U000e0020", "\u2066", "\u034f",
             "\u180b", "\ufe0f", "\u200d", "\u202e", "\x07", "\u2028", "\u3164"]
"""Characters that show as nothing (zero-width, soft hyphen, joiners, tags, bidi controls,
variation selectors, a control character, a line separator, a Hangul filler)."""


@pytest.mark.parametrize("other", ["Alice", "ALICE", "ａｌｉｃｅ", "\uff21lice", "al\u200bice",
                                   "alice\u00ad", "\u2066alice\u2069", "a\u034flice"])
def test_token_ids_that_are_one_person_once_normalised_are_refused(other: str) -> None:
    with pytest.raises(ConfigurationError) as err:
        TokenAuth.from_config(tokens(("alice", TOKEN_A, {}), (other, TOKEN_B, {})))
    assert "'alice'" in str(err.value) and repr(other.strip()) in str(err.value)
    assert "same reviewer once normalised" in str(err.value)
    # the same spelling twice is one reviewer with two tokens (a rotation), as before
    both = TokenAuth.from_config(tokens(("alice", TOKEN_A, {}), ("alice", TOKEN_B, {})))
    assert {i.id for i in both.identities} == {"alice"}


def test_notification_reviewers_that_collide_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="'alice' and 'Alice'"):
        load_config({"reviewers": [{"id": "alice"}, {"id": "Alice"}]})
    with pytest.raises(ConfigurationError, match="same slack_user"):
        load_config({"reviewers": [{"id": "alice", "slack_user": "U1"},
                                   {"id": "bob", "slack_user": "U1"}]})
    # a notification reviewer spelt differently from the token of the same person
    agent = make_agent(SqliteCheckpointer(tmp_path / "db.sqlite"))
    with pytest.raises(ConfigurationError, match="'alice' and 'Alice'"):
        create_app(agent, tokens=tokens(("alice", TOKEN_A, {})), use_env_tokens=False,
                   notify={"reviewers": [{"id": "Alice", "email": "a@example.com"}]})


def test_a_quorum_counts_one_person_once_whatever_the_spelling(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    agent = make_agent(SqliteCheckpointer(tmp_path / "db.sqlite"),
                       InterruptOn(allowed_decisions=["approve", "reject"], reviewers=["dba"],
                                   approvals=2))
    assert agent.invoke("clean up", thread_id="q").interrupted
    agent.resume("q", [{"type": "approve"}], reviewer=Reviewer("alice", {"dba"}))
    for alias in ("Alice", "ＡＬＩＣＥ", " alice ", "alice\u200b", "al\u00adice", "alice\u2060",
                  "alice\ufeff", "alice\U000e0020"):
        with pytest.raises(InvalidDecision, match="already approved"):
            agent.resume("q", [{"type": "approve"}], reviewer=Reviewer(alias, {"dba"}))
    assert executions() == [] and agent.get_thread("q").status == "interrupted"
    done = agent.resume("q", [{"type": "approve"}], reviewer=Reviewer("bob", {"dba"}))
    assert done.status == "completed" and executions() == [QUERY]


def test_self_approval_is_refused_whatever_the_spelling(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    agent = make_agent(SqliteCheckpointer(tmp_path / "db.sqlite"),
                       InterruptOn(allowed_decisions=["approve", "reject"], approvals=2,
                                   self_approval=False))
    assert agent.invoke("clean up", thread_id="s", reviewer=Reviewer("alice")).interrupted
    with pytest.raises(NotAuthorized, match="self_approval=False"):
        agent.resume("s", [{"type": "approve"}], reviewer=Reviewer("ALICE"))
    assert executions() == [] and agent.get_thread("s").status == "interrupted"


@settings(max_examples=300, deadline=None)
@given(name=st.text(st.characters(categories=("L", "N", "P", "S")), min_size=1, max_size=12),
       hidden=st.lists(st.tuples(st.integers(0, 12), st.sampled_from(INVISIBLE)), max_size=4))
def test_characters_that_show_as_nothing_do_not_make_another_reviewer(
        name: str, hidden: list[tuple[int, str]]) -> None:
    """An id with characters that show as nothing put anywhere in it is the same reviewer
    (a quorum counts it once, self-approval sees through it), and a reserved name spelt
    around with them is still reserved."""
    spelt = name
    for at, ch in hidden:
        spelt = spelt[:at] + ch + spelt[at:]
    assert same_reviewer(name, spelt)
    assert is_reserved("system:" + name) and is_reserved(
        "sys" + "".join(ch for _, ch in hidden) + "tem:" + spelt)


# -- expired and removed tokens on the channels without bearer tokens -------------------------


@pytest.fixture
def channels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
             ) -> Iterator[tuple[Any, FakeSlack, LiveServer, Path]]:
    """A live server with a token file (alice: dba, bob: ops), Slack and e-mail links;
    alice's notification entry takes her roles from her token."""
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    agent = make_agent(SqliteCheckpointer(tmp_path / "db.sqlite"))
    token_file = tmp_path / "tokens.json"
    token_file.write_text(json.dumps(tokens(("alice", TOKEN_A, {}))))
    with fake_slack() as slack:
        config = NotifyConfig.model_validate({
            "slack": {"token": slack.token, "signing_secret": SIGNING_SECRET,
                      "channel": "#approvals", "api_url": slack.url},
            "email": {"host": "127.0.0.1", "port": 9, "from": "interlock@example.com",
                      "link_secret": LINK_SECRET},
            "reviewers": [{"id": "alice", "slack_user": "U_ALICE",
                           "email": "alice@example.com"}],
            "dispatch": {"poll_interval": 0.05, "backoff": 60}})
        server = LiveServer(agent, tokens=token_file, notify=config)
        try:
            yield agent, slack, server, token_file
        finally:
            server.stop()


@pytest.mark.parametrize("change", ["expired", "removed"])
def test_an_expired_or_removed_token_no_longer_decides_through_slack_or_email(
        channels: tuple[Any, FakeSlack, LiveServer, Path], change: str) -> None:
    agent, slack, server, token_file = channels
    assert agent.invoke("clean up", thread_id="t").interrupted
    pending = agent.get_thread("t").interrupts[0]
    call = pending.value.action_requests[0]
    digest = call_digest(call.name, call.args)
    # the token changes after the notifications went out
    if change == "expired":
        past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
        token_file.write_text(json.dumps(tokens(("alice", TOKEN_A, {"expires": past}))))
    else:
        token_file.write_text(json.dumps(tokens(("bob", TOKEN_B, {}))))
    auth = server.state.auth
    assert auth is not None
    wait_for(lambda: auth.refresh() or
             "alice" not in {i.id for i in auth.identities} or
             all(i.expires_at is not None for i in auth.identities))
    # the API refuses the token (it is not in the file, or expired) ...
    api = httpx.post(f"{server.url}/api/threads/t/decisions", json={"decisions": [
        {"type": "approve"}]}, headers={"Authorization": f"Bearer {TOKEN_A}"})
    assert api.status_code == 401
    # ... and so does an e-mail link signed for her ...
    link = LinkPage(server, LinkSigner(LINK_SECRET).make(Link(
        "t", pending.id, call.tool_call_id, "alice", digest, time.time() + 600)))
    for answer in (link.open(), link.decide("approve")):
        assert answer.status_code == 410, answer.text
        assert ("expired" if change == "expired" else "no token any more") in \
            answer.json()["message"]
    # ... and a Slack button she presses
    body = click({"action_id": f"interlock_approve:{call.tool_call_id}",
                  "value": json.dumps({"t": "t", "i": pending.id, "c": call.tool_call_id,
                                       "d": digest})}, "U_ALICE")
    r = httpx.post(f"{server.url}/api/slack/interactions", content=body, headers=signed(body))
    assert r.status_code == 200
    (said,) = wait_for(lambda: slack.of("chat.postEphemeral"))
    assert said["user"] == "U_ALICE" and "not decided" in said["text"]
    assert ("expired" if change == "expired" else "no token any more") in said["text"]
    assert executions() == []
    assert agent.get_thread("t").status == "interrupted"
    assert not [a for a in agent.audit("t") if a.kind == "decision"]
