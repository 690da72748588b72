"""A request's Slack messages end up showing what is true of it, whatever the order and the
age of its events: every escalation is announced, a late retry never shows an older state, a
pruned outbox keeps what later updates need, and a message stays within Slack's limits.

Invariant 2: a known outcome (a decided call) is never shown as waiting again, and every
escalation has a notification that reaches the roles it names."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from interlock import (
    Agent,
    HumanInTheLoop,
    InterruptOn,
    Reviewer,
    ScriptedModel,
    SqliteCheckpointer,
    tool,
)
from interlock.notify import Dispatcher, NotifyConfig, build_channels

from .agents import make_agent
from .fakes import FakeSlack, fake_slack

DBA = Reviewer("alice", frozenset({"dba"}))


def buttons(message: dict[str, Any]) -> list[str]:
    return [e["text"]["text"] for b in message["blocks"] if b["type"] == "actions"
            for e in b["elements"]]


class Later:
    """The real clock moved on by ``offset`` (events are stored at the real time)."""

    def __init__(self) -> None:
        self.offset = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset


def dispatcher(store: Any, slack: FakeSlack, clock: Any,
               retention_days: float | None = None) -> Dispatcher:
    config = NotifyConfig.model_validate({
        "public_url": "https://review.example.com",
        "slack": {"token": slack.token, "signing_secret": "s" * 32, "channel": "#approvals",
                  "api_url": slack.url,
                  "channels": {"dba": "#dba", "oncall": "#oncall", "cfo": "#cfo"}},
        "dispatch": {"backoff": 5.0, "retention_days": retention_days}})
    return Dispatcher(store, build_channels(config, store), settings=config.dispatch,
                      clock=clock if callable(clock) else lambda: clock[0])


@tool
def drop_table(name: str) -> str:
    """Drop a table."""
    return "dropped"


@tool
def send_money(amount: int) -> str:
    """Send money."""
    return "sent"


def test_each_escalation_of_a_request_is_announced_to_its_roles(tmp_path: Path) -> None:
    """Two calls of one request escalate at different times: both escalations are events of
    their own, and each roles' channel gets its message; the outcome updates all three."""
    now = [datetime(2030, 1, 1, 9, 0, tzinfo=UTC)]
    store = SqliteCheckpointer(tmp_path / "db.sqlite")
    agent = two_requests(store, now, per_call=False, money_after=60)
    with fake_slack() as slack:
        d = dispatcher(store, slack, now)
        assert agent.invoke("go", thread_id="t1").interrupted
        asyncio.run(d.run_once())
        for minutes in (11, 60):
            now[0] += timedelta(minutes=minutes)
            agent.expire_due()
            asyncio.run(d.run_once())
        events = asyncio.run(store.outbox_list(thread_id="t1"))
        escalated = [e for e in events if e.type == "request.escalated"]
        assert [e.notice.roles for e in escalated] == [["oncall"], ["cfo"]]
        assert len({e.id for e in escalated}) == 2
        posts = slack.of("chat.postMessage")
        assert [p["channel"] for p in posts] == ["#dba", "#oncall", "#cfo"]
        agent.resume("t1", [{"type": "reject", "message": "no"}] * 2, reviewer=DBA)
        asyncio.run(d.run_once())
        last = {u["ts"]: u for u in slack.of("chat.update")}
        assert len(last) == 3 and all(buttons(u) == [] for u in last.values())
        assert all("rejected by alice" in json.dumps(u["blocks"]) for u in last.values())
        assert slack.refused == []
    agent.close()


def test_a_late_retry_never_shows_a_decided_request_as_waiting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two approvals needed: the update for alice's approval is rate-limited, bob's approval
    decides the call, and the first update's retry comes last: the message still shows the
    decision, without buttons."""
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    later = Later()
    store = SqliteCheckpointer(tmp_path / "db.sqlite")
    agent = make_agent(store, InterruptOn(allowed_decisions=["approve", "reject"],
                                          reviewers=["dba"], approvals=2))
    with fake_slack() as slack:
        d = dispatcher(store, slack, later)
        agent.invoke("clean up", thread_id="t1")
        asyncio.run(d.run_once())
        agent.resume("t1", [{"type": "approve"}], reviewer=DBA)
        slack.fail_next("chat.update", "ratelimited")
        asyncio.run(d.run_once())
        assert slack.of("chat.update") == []  # failed, to be retried
        agent.resume("t1", [{"type": "approve"}], reviewer=Reviewer("bob", frozenset({"dba"})))
        asyncio.run(d.run_once())
        later.offset += timedelta(minutes=5)
        asyncio.run(d.run_once())  # the retry of alice's update
        updates = slack.of("chat.update")
        assert len(updates) == 2
        for u in updates:
            text = json.dumps(u["blocks"])
            assert buttons(u) == [] and "waiting for a decision" not in text
            assert "approved by bob" in text
        assert agent.get_thread("t1").status == "completed"
        assert {e.status for e in asyncio.run(store.outbox_list())} == {"delivered"}
    agent.close()


def test_a_message_posted_late_shows_the_outcome(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Slack is down when the request is raised and back after the decision: the one message
    posted shows the outcome, not buttons for a call that was decided."""
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    later = Later()
    store = SqliteCheckpointer(tmp_path / "db.sqlite")
    agent = make_agent(store)
    with fake_slack() as slack:
        d = dispatcher(store, slack, later)
        agent.invoke("clean up", thread_id="t1")
        slack.fail_next("chat.postMessage", "service_unavailable")
        asyncio.run(d.run_once())
        agent.resume("t1", [{"type": "reject", "message": "not today"}], reviewer=DBA)
        for _ in range(2):  # the request's message is posted, then the decision updates it
            later.offset += timedelta(minutes=5)
            asyncio.run(d.run_once())
        (posted,) = slack.of("chat.postMessage")
        assert buttons(posted) == [] and "rejected by alice" in json.dumps(posted["blocks"])
        assert all(buttons(u) == [] for u in slack.of("chat.update"))
        assert {e.status for e in asyncio.run(store.outbox_list())} == {"delivered"}
    agent.close()


def test_pruning_keeps_the_message_of_a_request_still_waiting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request waits longer than ``retention_days``: the prune keeps the event that posted
    its message, so the decision still updates it; once decided, the prune removes it."""
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    later = Later()
    store = SqliteCheckpointer(tmp_path / "db.sqlite")
    agent = make_agent(store, clock=later)
    with fake_slack() as slack:
        d = dispatcher(store, slack, later, retention_days=30)
        agent.invoke("clean up", thread_id="t1")
        asyncio.run(d.run_once())
        later.offset += timedelta(days=31)
        assert asyncio.run(d.prune_delivered()) == 0
        agent.resume("t1", [{"type": "reject", "message": "no"}], reviewer=DBA)
        asyncio.run(d.run_once())
        (update,) = slack.of("chat.update")
        assert buttons(update) == [] and "rejected by alice" in json.dumps(update["blocks"])
        later.offset += timedelta(days=31)
        d._pruned_at = None  # the next pass prunes now, not an hour later
        assert asyncio.run(d.prune_delivered()) == 2
        assert asyncio.run(store.outbox_list()) == []
    agent.close()


@pytest.mark.parametrize("reply", [
    pytest.param({"name": "execute_sql", "args": {"query": "&" * 2400}}, id="escaped-args"),
    pytest.param({"name": "execute_sql", "args": {"query": "x"}, "id": "c" * 300},
                 id="long-call-id"),
    pytest.param({"name": "execute_sql", "args": {"query": "x"}, "id": "c" * 2100},
                 id="call-id-too-long-for-a-button"),
    pytest.param([{"name": "execute_sql", "args": {"query": f"DELETE {i}"}, "id": f"k{i}"}
                  for i in range(12)], id="twelve-calls"),
])
def test_a_request_message_stays_within_slacks_limits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reply: Any) -> None:
    """The fake Web API refuses what Slack refuses (``invalid_blocks``); the message for a
    request a model shaped is accepted, and every call is in it or named as not shown."""
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    later = Later()
    store = SqliteCheckpointer(tmp_path / "db.sqlite")
    agent = make_agent(store, model=ScriptedModel([reply, "done"]))
    with fake_slack() as slack:
        asyncio.run(dispatcher(store, slack, later).run_once())
        agent.invoke("clean up", thread_id="t1")
        asyncio.run(dispatcher(store, slack, later).run_once())
        assert slack.refused == []
        (posted,) = slack.of("chat.postMessage")
        text = json.dumps(posted["blocks"])
        calls = reply if isinstance(reply, list) else [reply]
        shown = sum(1 for b in posted["blocks"] if b["type"] == "actions")
        if shown < len(calls):
            assert f"{len(calls) - shown} more call(s) of this request are not shown" in text
        if len(calls[0].get("id", "")) > 2000:
            assert buttons(posted) == ["Approve in inbox…", "Reject in inbox…"]
        elif "&" in calls[0]["args"]["query"]:
            # arguments cut to fit: nothing is approved unseen, Reject stays a button
            assert "more characters not shown" in text
            assert buttons(posted) == ["Approve in inbox…", "Reject"]
        else:
            assert "Approve" in buttons(posted)
    agent.close()


def two_requests(store: Any, now: list[datetime], *, per_call: bool,
                 money_after: int = 10) -> Agent:
    """``drop_table`` (dba, escalated to on-call after 10 minutes) and ``send_money`` (dba,
    escalated to the CFO after ``money_after`` minutes) proposed together, one request per
    call or both in one."""
    return Agent(
        model=ScriptedModel([[{"name": "drop_table", "args": {"name": "orders"}, "id": "d"},
                              {"name": "send_money", "args": {"amount": 5}, "id": "m"}],
                             "done"]),
        tools=[drop_table, send_money],
        middleware=[HumanInTheLoop(interrupt_on={
            "drop_table": InterruptOn(reviewers=["dba"], escalate_to=["oncall"],
                                      escalate_after=timedelta(minutes=10),
                                      expires_after=timedelta(hours=5)),
            "send_money": InterruptOn(reviewers=["dba"], escalate_to=["cfo"],
                                      escalate_after=timedelta(minutes=money_after),
                                      expires_after=timedelta(hours=5))},
            interrupt_mode="per_call" if per_call else "batched")],
        checkpointer=store, clock=lambda: now[0])


def test_an_escalation_to_several_roles_reaches_each_roles_channel(tmp_path: Path) -> None:
    """Both calls of one request escalate in the same sweep (to on-call and to the CFO):
    one event, posted in both roles' channels, and both messages updated at the outcome."""
    now = [datetime(2030, 1, 1, 9, 0, tzinfo=UTC)]
    store = SqliteCheckpointer(tmp_path / "db.sqlite")
    agent = two_requests(store, now, per_call=False)
    with fake_slack() as slack:
        d = dispatcher(store, slack, now)
        agent.invoke("go", thread_id="t1")
        asyncio.run(d.run_once())
        now[0] += timedelta(minutes=11)
        agent.expire_due()
        asyncio.run(d.run_once())
        assert sorted(p["channel"] for p in slack.of("chat.postMessage")) == [
            "#cfo", "#dba", "#oncall"]
        agent.resume("t1", [{"type": "reject", "message": "no"}] * 2, reviewer=DBA)
        asyncio.run(d.run_once())
        last = {u["channel"]: u for u in slack.of("chat.update")}
        assert set(last) == {"CDBA", "CCFO", "CONCALL"}
        assert all(buttons(u) == [] for u in last.values())
    agent.close()


def test_a_late_escalation_post_after_a_prune_shows_the_decision(tmp_path: Path) -> None:
    """One request per call: the escalation post of ``drop_table``'s request fails for good
    (dead); its call is rejected, and a prune a month later removes that decision's event
    while the other request still waits. When the dead event is retried, its message says
    the call was rejected: no buttons, no "still waiting"."""
    from interlock.notify import retry_event

    now = [datetime(2030, 1, 1, 9, 0, tzinfo=UTC)]
    store = SqliteCheckpointer(tmp_path / "db.sqlite")
    agent = two_requests(store, now, per_call=True)
    with fake_slack() as slack:
        d = dispatcher(store, slack, now, retention_days=30)
        agent.invoke("go", thread_id="t1")
        asyncio.run(d.run_once())
        now[0] += timedelta(minutes=11)
        slack.fail_next("chat.postMessage", "channel_not_found")  # not retried: dead
        agent.expire_due()
        asyncio.run(d.run_once())
        (dead,) = [e for e in asyncio.run(store.outbox_list()) if e.status == "dead"]
        call = dead.notice.calls[0].tool_call_id
        agent.resume("t1", {call: {"type": "reject", "message": "no"}}, reviewer=DBA)
        asyncio.run(d.run_once())
        now[0] += timedelta(days=31)
        assert asyncio.run(d.prune_delivered()) >= 1
        assert agent.get_thread("t1").status == "interrupted"  # the other request waits
        asyncio.run(retry_event(store, dead.id, now=now[0]))
        before = len(slack.calls)
        asyncio.run(d.run_once())
        sent = [c.args for c in slack.calls[before:]]
        assert sent and all(buttons(m) == [] and "still waiting" not in m["text"] for m in sent)
        assert all("rejected by alice" in json.dumps(m["blocks"]) for m in sent)
        assert slack.refused == []
    agent.close()
