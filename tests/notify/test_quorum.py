"""Four-eyes / quorum approvals and escalation, through the public API on every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from interlock import (
    ConfigurationError,
    InterruptOn,
    InvalidDecision,
    NotAuthorized,
    Reviewer,
)

from .agents import QUERY, executions, make_agent

if TYPE_CHECKING:
    from conftest import StoreFactory

DBA = frozenset({"dba"})
ALICE, BOB, CAROL = Reviewer("alice", DBA), Reviewer("bob", DBA), Reviewer("carol", DBA)
FOUR_EYES = InterruptOn(approvals=2, reviewers=["dba"])


@pytest.fixture(autouse=True)
def _runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))


def config_of(agent: Any, thread_id: str) -> Any:
    (intr,) = agent.get_thread(thread_id).interrupts
    return intr.value.review_configs[0], intr.value.action_requests[0]


def test_two_distinct_approvals_run_the_call_once(stores: StoreFactory) -> None:
    agent = make_agent(stores(), FOUR_EYES)
    agent.invoke("clean up", thread_id="t1")
    first = agent.resume("t1", [{"type": "approve"}], reviewer=ALICE)
    assert first.interrupted and executions() == []
    cfg, _ = config_of(agent, "t1")
    assert (cfg.approvals, [a.by for a in cfg.approved_by]) == (2, ["alice"])
    with pytest.raises(InvalidDecision, match="already approved"):
        agent.resume("t1", [{"type": "approve"}], reviewer=ALICE)
    # a restart: a new agent on the same store sees the partial approval
    again = make_agent(stores(), FOUR_EYES)
    cfg, _ = config_of(again, "t1")
    assert [a.by for a in cfg.approved_by] == ["alice"]
    done = again.resume("t1", [{"type": "approve"}], reviewer=BOB)
    assert done.status == "completed" and executions() == [QUERY]
    kinds = [(a.kind, a.actor) for a in again.audit("t1")
             if a.kind in ("approval_recorded", "decision")]
    assert kinds == [("approval_recorded", "alice"), ("decision", "bob")]
    events = [(e.type, e.notice.actor) for e in
              _run(again.checkpointer.outbox_list(thread_id="t1"))]
    assert ("request.approval_recorded", "alice") in events
    assert ("request.decided", "bob") in events


def test_one_reject_rejects_and_an_edit_restarts_the_count(stores: StoreFactory) -> None:
    agent = make_agent(stores(), InterruptOn(approvals=2))
    agent.invoke("a", thread_id="r")
    agent.resume("r", [{"type": "approve"}], reviewer=ALICE)
    result = agent.resume("r", [{"type": "reject", "message": "no"}], reviewer=BOB)
    assert result.status == "completed" and executions() == []
    assert agent.journal("r")[0].state.value == "rejected"

    agent.invoke("b", thread_id="e")
    agent.resume("e", [{"type": "approve"}], reviewer=ALICE)
    edited = {"type": "edit", "edited_action": {"name": "execute_sql",
                                                "args": {"query": "DELETE FROM orders WHERE id=8"}}}
    assert agent.resume("e", [edited], reviewer=BOB).interrupted
    cfg, req = config_of(agent, "e")
    assert [a.by for a in cfg.approved_by] == ["bob"]  # the count restarted with the editor
    assert req.args == {"query": "DELETE FROM orders WHERE id=8"}  # what will run is shown
    assert cfg.revision == 2  # an approval names the revision it was shown
    with pytest.raises(InvalidDecision, match="already approved"):
        agent.resume("e", [{"type": "approve", "revision": 2}], reviewer=BOB)
    assert agent.resume("e", [{"type": "approve", "revision": 2}],
                        reviewer=ALICE).status == "completed"
    assert executions() == ["DELETE FROM orders WHERE id=8"]
    assert agent.journal("e")[0].state.value == "succeeded"


def test_remember_is_refused_and_self_approval_can_be_forbidden(stores: StoreFactory) -> None:
    agent = make_agent(stores(), InterruptOn(approvals=2, self_approval=False))
    agent.invoke("c", thread_id="s", reviewer=ALICE)
    with pytest.raises(InvalidDecision, match="remember"):
        agent.resume("s", [{"type": "approve", "remember": "thread"}], reviewer=BOB)
    with pytest.raises(NotAuthorized, match="self_approval"):
        agent.resume("s", [{"type": "approve"}], reviewer=ALICE)
    assert agent.resume("s", [{"type": "approve"}], reviewer=BOB).interrupted
    assert agent.resume("s", [{"type": "approve"}], reviewer=CAROL).status == "completed"
    assert executions() == [QUERY]


@pytest.mark.parametrize("kwargs", [
    {"approvals": 0}, {"approvals": True}, {"escalate_to": ["boss"]},
    {"escalate_to": "boss", "escalate_after": timedelta(minutes=1)},
    {"escalate_to": ["boss"], "escalate_after": timedelta(minutes=10),
     "expires_after": timedelta(minutes=5)},
])
def test_bad_quorum_and_escalation_settings_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        InterruptOn(**kwargs)


def test_escalation_then_expiry_with_a_fake_clock(stores: StoreFactory) -> None:
    now = [datetime(2030, 1, 1, 9, 0, tzinfo=UTC)]
    policy = InterruptOn(reviewers=["dba"], escalate_to=["oncall"],
                         escalate_after=timedelta(minutes=30), expires_after=timedelta(hours=1))
    agent = make_agent(stores(), policy, clock=lambda: now[0])
    agent.invoke("d", thread_id="x")
    now[0] += timedelta(minutes=29)
    agent.expire_due()
    assert not [a for a in agent.audit("x") if a.kind == "escalated"]
    now[0] += timedelta(minutes=2)
    agent.expire_due()
    (esc,) = [a for a in agent.audit("x") if a.kind == "escalated"]
    assert (esc.actor, esc.data["roles"]) == ("system:escalation", ["oncall"])
    assert esc.ts == datetime(2030, 1, 1, 9, 31, tzinfo=UTC)
    cfg, _ = config_of(agent, "x")
    assert cfg.reviewers == ["dba", "oncall"] and cfg.escalated_at == esc.ts
    events = _run(agent.checkpointer.outbox_list(thread_id="x"))
    (escalated,) = [e for e in events if e.type == "request.escalated"]
    assert escalated.notice.roles == ["oncall"] and escalated.notice.pending
    agent.expire_due()  # escalates once
    assert len([a for a in agent.audit("x") if a.kind == "escalated"]) == 1
    now[0] = datetime(2030, 1, 1, 10, 0, 1, tzinfo=UTC)
    agent.expire_due()
    (exp,) = [a for a in agent.audit("x") if a.kind == "expired"]
    assert exp.actor == "system:expiry"
    assert agent.get_thread("x").status == "completed" and executions() == []
    types = [e.type for e in _run(agent.checkpointer.outbox_list(thread_id="x"))]
    assert types.count("request.expired") == 1


def _run(coro: Any) -> Any:
    import asyncio

    return asyncio.run(coro)
