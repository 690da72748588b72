"""Approvals bound to what was shown, under the rules of the tool that runs (the library).

The attacks: an edit into a stricter tool that runs on the editor's single approval; a
reviewer without the stricter tool's role completing its quorum; a colleague's approval, made
for the call as it was, counted for the call after someone else's edit. And the quorum matrix:
whatever is edited by whom, the call that runs has the approvals of its own tool from distinct,
allowed people (asserted on the tool's runs and the audit rows)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from interlock import (
    InterruptConflict,
    InvalidDecision,
    NotAuthorized,
    Reviewer,
    StaleRevision,
)

from .revision_agent import executions, make_agent, proposal

if TYPE_CHECKING:
    from conftest import StoreFactory

DBA, FIN = frozenset({"dba"}), frozenset({"finance"})
ALICE, BOB, CAROL, DAVE = (Reviewer(n, DBA) for n in ("alice", "bob", "carol", "dave"))
FRANK, GINA = Reviewer("frank", FIN), Reviewer("gina", FIN)
BOTH = Reviewer("hal", DBA | FIN)
OLGA = Reviewer("olga", frozenset({"oncall"}))


@pytest.fixture(autouse=True)
def _runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))


def edit(name: str, revision: int | None = None, **args: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"type": "edit", "edited_action": {"name": name, "args": args}}
    if revision is not None:
        d["revision"] = revision
    return d


def approve(revision: int | None = None) -> dict[str, Any]:
    return {"type": "approve"} if revision is None else {"type": "approve", "revision": revision}


def pending(agent: Any, thread_id: str) -> tuple[Any, Any]:
    (intr,) = agent.get_thread(thread_id).interrupts
    return intr.value.action_requests[0], intr.value.review_configs[0]


def decisions(agent: Any, thread_id: str) -> list[tuple[str, str, Any]]:
    """(kind, actor, revision) of the approval and decision rows of the thread."""
    return [(a.kind, a.actor, a.data.get("revision")) for a in agent.audit(thread_id)
            if a.kind in ("approval_recorded", "decision")]


def snapshot(agent: Any, thread_id: str) -> tuple[Any, ...]:
    """What a refused decision must leave unchanged."""
    t = agent.get_thread(thread_id)
    return (len(agent.audit(thread_id)), [i.value.model_dump() for i in t.interrupts],
            executions())


def test_an_edit_into_a_stricter_tool_is_reviewed_under_its_rules(
        stores: StoreFactory) -> None:
    """Critical: a dba edits her own run's harmless lookup into drop_table(customers). It runs
    only after two other dbas approved it (drop_table: approvals=2, self_approval=False)."""
    agent = make_agent(stores())
    agent.invoke(proposal("lookup", table="customers"), thread_id="t", reviewer=ALICE)
    result = agent.resume("t", [edit("drop_table", table="customers")], reviewer=ALICE)
    assert result.interrupted and executions() == []
    action, cfg = pending(agent, "t")
    assert (action.name, action.args) == ("drop_table", {"table": "customers"})
    assert (cfg.revision, cfg.edited_by, cfg.reviewers, cfg.approvals, cfg.self_approval,
            cfg.approved_by) == (2, "alice", ["dba"], 2, False, None)
    with pytest.raises(NotAuthorized, match="may not approve"):
        agent.resume("t", [approve(2)], reviewer=ALICE)
    assert agent.resume("t", [approve(2)], reviewer=BOB).interrupted
    assert executions() == []
    assert agent.resume("t", [approve(2)], reviewer=CAROL).status == "completed"
    assert executions() == ["drop_table customers"]
    assert decisions(agent, "t") == [("approval_recorded", "alice", 1),
                                     ("approval_recorded", "bob", 2), ("decision", "carol", 2)]


def test_the_roles_of_an_edited_call_are_its_new_tools(stores: StoreFactory) -> None:
    """Critical, variant: after an edit of a finance call into drop_table, a finance-only
    reviewer may not complete the drop_table quorum."""
    agent = make_agent(stores())
    agent.invoke(proposal("pay", account="ops", amount=10), thread_id="t")
    assert agent.resume("t", [edit("drop_table", table="customers")], reviewer=BOTH).interrupted
    before = snapshot(agent, "t")
    with pytest.raises(NotAuthorized, match="dba"):
        agent.resume("t", [approve(2)], reviewer=FRANK)
    assert snapshot(agent, "t") == before
    _, cfg = pending(agent, "t")
    assert cfg.reviewers == ["dba"] and [a.by for a in cfg.approved_by or []] == []
    agent.resume("t", [approve(2)], reviewer=ALICE)
    assert agent.resume("t", [approve(2)], reviewer=BOB).status == "completed"
    assert executions() == ["drop_table customers"]


@pytest.mark.parametrize("shown", [None, 1])
def test_a_stale_approval_never_counts_for_an_edited_call(stores: StoreFactory,
                                                          shown: int | None) -> None:
    """Major: frank approves the payment as he saw it; gina edits it (account and amount), so
    the count restarts. Frank's second approval, sent for what he saw (no revision, as
    LangChain clients send it, or revision 1), is refused and nothing is stored; sent for
    revision 2 it counts."""
    agent = make_agent(stores())
    agent.invoke(proposal("pay", account="acme", amount=100), thread_id="t")
    agent.resume("t", [approve()], reviewer=FRANK)
    agent.resume("t", [edit("pay", account="offshore-9", amount=90000)], reviewer=GINA)
    before = snapshot(agent, "t")
    with pytest.raises(StaleRevision) as err:
        agent.resume("t", [approve(shown)], reviewer=FRANK)
    assert isinstance(err.value, InterruptConflict)
    assert "'gina' edited the call" in str(err.value) and "offshore-9" in str(err.value)
    assert snapshot(agent, "t") == before and executions() == []
    assert agent.resume("t", [approve(2)], reviewer=FRANK).status == "completed"
    assert executions() == ["pay offshore-9 90000"]
    assert decisions(agent, "t") == [("approval_recorded", "frank", 1),
                                     ("approval_recorded", "gina", 1),
                                     ("decision", "frank", 2)]
    (row,) = [a for a in agent.audit("t") if a.kind == "decision"]
    assert len(row.data["digest"]) == 32


def test_a_decision_for_a_newer_revision_than_shown_is_refused(stores: StoreFactory) -> None:
    agent = make_agent(stores())
    agent.invoke(proposal("pay", account="acme", amount=1), thread_id="t")
    with pytest.raises(StaleRevision, match="made for revision 3"):
        agent.resume("t", [approve(3)], reviewer=FRANK)
    with pytest.raises(StaleRevision):
        agent.resume("t", [{"type": "reject", "revision": 2}], reviewer=FRANK)
    assert agent.resume("t", [approve(1)], reviewer=FRANK).interrupted


# -- the quorum matrix -----------------------------------------------------------------------


def test_an_edit_into_a_looser_tool_runs_under_the_looser_rules(stores: StoreFactory) -> None:
    """drop_table proposed; a dba (not the requester) edits it into a lookup: lookup needs one
    approval, the editor's, and only the lookup runs."""
    agent = make_agent(stores())
    agent.invoke(proposal("drop_table", table="customers"), thread_id="t", reviewer=ALICE)
    assert agent.resume("t", [edit("lookup", table="customers")],
                        reviewer=BOB).status == "completed"
    assert executions() == ["lookup customers"]
    assert decisions(agent, "t") == [("decision", "bob", 1)]


def test_a_remembered_approval_of_an_edited_call_is_for_the_tool_approved(
        stores: StoreFactory) -> None:
    """lookup edited into note (one approval, not by the editor): bob approves revision 2 and
    remembers it; the rule is for note, what bob approved, not for the lookup he never
    saw."""
    agent = make_agent(stores())
    agent.invoke(proposal("lookup", table="a"), thread_id="t")
    agent.resume("t", [edit("note", text="hi")], reviewer=ALICE)
    _, cfg = pending(agent, "t")
    assert (cfg.revision, cfg.approved_by) == (2, None)
    done = agent.resume("t", [{"type": "approve", "revision": 2, "remember": "thread"}],
                        reviewer=BOB)
    assert done.status == "completed" and executions() == ["note hi"]
    assert [r.tool_name for r in agent.get_thread("t").remembered] == ["note"]


def test_the_requester_may_not_edit_a_call_without_self_approval(stores: StoreFactory) -> None:
    agent = make_agent(stores())
    agent.invoke(proposal("drop_table", table="t1"), thread_id="t", reviewer=ALICE)
    before = snapshot(agent, "t")
    for target in ("lookup", "drop_table"):
        with pytest.raises(NotAuthorized, match="self_approval"):
            agent.resume("t", [edit(target, table="t2")], reviewer=ALICE)
    assert snapshot(agent, "t") == before


def test_an_edit_after_partial_approvals_restarts_the_count(stores: StoreFactory) -> None:
    """bob approves drop_table(t1); carol edits it into drop_table(t2): bob's approval was
    for t1 and is dropped, carol (the author) does not count and may not approve; bob and
    dave approve revision 2 and only t2 is dropped."""
    agent = make_agent(stores())
    agent.invoke(proposal("drop_table", table="t1"), thread_id="t", reviewer=ALICE)
    agent.resume("t", [approve(1)], reviewer=BOB)
    agent.resume("t", [edit("drop_table", 1, table="t2")], reviewer=CAROL)
    _, cfg = pending(agent, "t")
    assert (cfg.revision, cfg.approved_by) == (2, None)
    with pytest.raises(NotAuthorized):
        agent.resume("t", [approve(2)], reviewer=CAROL)
    agent.resume("t", [approve(2)], reviewer=BOB)
    with pytest.raises(InvalidDecision, match="already approved"):
        agent.resume("t", [approve(2)], reviewer=BOB)
    assert executions() == []
    assert agent.resume("t", [approve(2)], reviewer=DAVE).status == "completed"
    assert executions() == ["drop_table t2"]
    assert decisions(agent, "t") == [("approval_recorded", "bob", 1),
                                     ("approval_recorded", "carol", 1),
                                     ("approval_recorded", "bob", 2), ("decision", "dave", 2)]


def test_an_edit_by_an_approver_counts_once_where_self_approval_is_on(
        stores: StoreFactory) -> None:
    """pay (two finance approvals, self-approval on): gina edits the amount; her edit is the
    first approval of revision 2, so one more from someone else runs it, and gina approving
    again is refused."""
    agent = make_agent(stores())
    agent.invoke(proposal("pay", account="acme", amount=5), thread_id="t")
    agent.resume("t", [edit("pay", account="acme", amount=6)], reviewer=GINA)
    _, cfg = pending(agent, "t")
    assert [a.by for a in cfg.approved_by] == ["gina"] and cfg.revision == 2
    with pytest.raises(InvalidDecision, match="already approved"):
        agent.resume("t", [approve(2)], reviewer=GINA)
    assert agent.resume("t", [approve(2)], reviewer=FRANK).status == "completed"
    assert executions() == ["pay acme 6"]


def test_a_second_edit_makes_a_third_revision(stores: StoreFactory) -> None:
    agent = make_agent(stores())
    agent.invoke(proposal("lookup", table="a"), thread_id="t")
    agent.resume("t", [edit("drop_table", table="b")], reviewer=ALICE)
    with pytest.raises(StaleRevision):  # made for what was shown before the edit
        agent.resume("t", [edit("drop_table", 1, table="c")], reviewer=BOB)
    agent.resume("t", [edit("drop_table", 2, table="c")], reviewer=BOB)
    action, cfg = pending(agent, "t")
    assert (action.args, cfg.revision, cfg.edited_by) == ({"table": "c"}, 3, "bob")
    agent.resume("t", [approve(3)], reviewer=ALICE)
    assert agent.resume("t", [approve(3)], reviewer=CAROL).status == "completed"
    assert executions() == ["drop_table c"]


def escalated(stores: StoreFactory, tool: str, **args: Any) -> tuple[Any, list[datetime]]:
    """An agent on a fake clock with a ``tool`` request on thread ``t`` escalated to oncall
    (its 30 minutes passed): olga, oncall only, may decide it now."""
    now = [datetime(2030, 1, 1, 9, 0, tzinfo=UTC)]
    agent = make_agent(stores(), clock=lambda: now[0])
    agent.invoke(proposal(tool, **args), thread_id="t")
    now[0] += timedelta(minutes=31)
    agent.expire_due()
    _, cfg = pending(agent, "t")
    assert cfg.reviewers == ["dba", "oncall"] and cfg.escalated_at is not None
    return agent, now


@pytest.mark.parametrize("tool", ["prod_sql", "deploy"])
def test_an_escalated_reviewers_edit_is_not_an_approval_of_the_new_revision(
        stores: StoreFactory, tool: str) -> None:
    """olga (oncall) may decide revision 1 only because it was escalated to her. Her edit makes
    revision 2, decided under the tool's own rules (dba, escalation counted from the edit):
    it is not one of its approvals, so the rewritten call never runs on her word. It runs,
    once, after the dba approvals its tool needs; olga may approve it herself only once
    revision 2 is escalated in its turn."""
    key = "query" if tool == "prod_sql" else "service"
    agent, now = escalated(stores, tool, **{key: "a"})
    result = agent.resume("t", [edit(tool, **{key: "b"})], reviewer=OLGA)
    assert result.interrupted and executions() == []
    action, cfg = pending(agent, "t")
    assert (action.args, cfg.revision, cfg.edited_by) == ({key: "b"}, 2, "olga")
    assert (cfg.reviewers, cfg.approved_by, cfg.escalated_at) == (["dba"], None, None)
    before = snapshot(agent, "t")
    with pytest.raises(NotAuthorized, match="dba"):
        agent.resume("t", [approve(2)], reviewer=OLGA)
    assert snapshot(agent, "t") == before
    if tool == "deploy":  # two dba approvals, neither of them olga's edit
        assert agent.resume("t", [approve(2)], reviewer=ALICE).interrupted
        assert executions() == []
        assert agent.resume("t", [approve(2)], reviewer=BOB).status == "completed"
        assert decisions(agent, "t") == [("approval_recorded", "olga", 1),
                                         ("approval_recorded", "alice", 2),
                                         ("decision", "bob", 2)]
    else:  # revision 2 escalates 30 minutes after the edit: then olga may approve it
        now[0] += timedelta(minutes=31)
        agent.expire_due()
        _, cfg = pending(agent, "t")
        assert cfg.reviewers == ["dba", "oncall"]
        assert agent.resume("t", [approve(2)], reviewer=OLGA).status == "completed"
        assert decisions(agent, "t") == [("approval_recorded", "olga", 1),
                                         ("decision", "olga", 2)]
    assert executions() == [f"{tool} b"]


def test_an_escalated_reviewer_may_approve_but_not_remember(stores: StoreFactory) -> None:
    """Remembering approves the thread's later prod_sql calls, which need a dba: olga, who
    may decide this one only because it was escalated, is refused (nothing changes) and may
    approve it without remembering; the next call pauses for a dba. A dba's remembered
    approval still applies."""
    agent, _ = escalated(stores, "prod_sql", query="select 1")
    before = snapshot(agent, "t")
    with pytest.raises(NotAuthorized, match="not remember"):
        agent.resume("t", [{"type": "approve", "remember": "thread"}], reviewer=OLGA)
    assert snapshot(agent, "t") == before and agent.get_thread("t").remembered == []
    assert agent.resume("t", [approve()], reviewer=OLGA).status == "completed"
    later = agent.invoke(proposal("prod_sql", query="drop table customers"), thread_id="t")
    assert later.interrupted and executions() == ["prod_sql select 1"]
    agent.resume("t", [{"type": "approve", "remember": "thread"}], reviewer=ALICE)
    assert [r.created_by for r in agent.get_thread("t").remembered] == ["alice"]
    assert agent.invoke(proposal("prod_sql", query="select 2"), thread_id="t").status == \
        "completed"
    assert executions() == ["prod_sql select 1", "prod_sql drop table customers",
                            "prod_sql select 2"]


@contextlib.contextmanager
def deciders(stores: StoreFactory, runs: Path, monkeypatch: pytest.MonkeyPatch,
             ) -> Iterator[tuple[Any, Any]]:
    """carol and dave, dbas, each a process of its own (tests/procs/revision_worker.py) on the
    test's store, ready to decide; the tools write their runs to ``runs``. Both must exit
    cleanly afterwards."""
    if not stores.durable:
        pytest.skip("processes need a shared durable store")
    from procs.harness import LineProcess

    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(runs))
    carol, dave = (LineProcess("revision_worker.py", "--db", stores.url(), "--runs", str(runs),
                               "--reviewer", name, "--role", "dba") for name in ("carol", "dave"))
    try:
        for w in (carol, dave):
            assert w.recv(60) == "ready"
        yield carol, dave
    finally:
        codes = [w.close() for w in (carol, dave)]
    assert codes == [0, 0]


@pytest.mark.slow
def test_an_edit_and_an_approval_racing_from_two_processes(
        stores: StoreFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """drop_table(old) has bob's approval (1 of 2). At the same moment carol (another
    process) edits it into drop_table(new) and dave approves revision 1. Whichever is stored
    first, the other is refused, and what runs has two approvals of its own revision from
    distinct dbas other than the requester and the editor."""
    agent = make_agent(stores())
    lost = ("result conflict", "result refused ThreadBusy")  # stored nothing
    with deciders(stores, tmp_path / "runs.txt", monkeypatch) as (carol, dave):
        for n in range(4):
            tid = f"r{n}"
            agent.invoke(proposal("drop_table", table=f"old{n}"), thread_id=tid, reviewer=ALICE)
            agent.resume(tid, [approve(1)], reviewer=BOB)
            carol.send(f"task {tid} " + json.dumps(edit("drop_table", 1, table=f"new{n}")))
            dave.send(f"task {tid} " + json.dumps(approve(1)))
            assert [carol.recv(60), dave.recv(60)] == ["armed", "armed"]
            for w in (carol, dave):
                w.send("go")
            by_carol, by_dave = carol.recv(120), dave.recv(120)
            if by_dave == "result won":  # the approval first: the old table, bob and dave
                assert by_carol in (*lost, "result refused NoPendingInterrupt",
                                    "result refused StaleInterrupt"), by_carol
                assert executions()[-1] == f"drop_table old{n}"
                assert decisions(agent, tid) == [("approval_recorded", "bob", 1),
                                                 ("decision", "dave", 1)]
                continue
            # the edit first: dave's approval was for revision 1 and never counts
            assert by_carol == "result partial", (by_carol, by_dave)
            assert by_dave in (*lost, "result refused StaleRevision"), by_dave
            assert f"drop_table new{n}" not in executions()
            with pytest.raises(NotAuthorized):
                agent.resume(tid, [approve(2)], reviewer=CAROL)
            agent.resume(tid, [approve(2)], reviewer=BOB)
            assert agent.resume(tid, [approve(2)], reviewer=DAVE).status == "completed"
            assert executions()[-1] == f"drop_table new{n}"
            assert decisions(agent, tid) == [("approval_recorded", "bob", 1),
                                             ("approval_recorded", "carol", 1),
                                             ("approval_recorded", "bob", 2),
                                             ("decision", "dave", 2)]
    assert len(executions()) == 4  # one drop per thread, never both tables
    assert all(not line.startswith("drop_table old") or
               f"drop_table new{line[-1]}" not in executions() for line in executions())


@pytest.mark.slow
def test_two_edits_racing_from_two_processes(
        stores: StoreFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """drop_table(old) waits at revision 1. At the same moment carol and dave (two processes)
    each edit it, both from revision 1, into a different table. Exactly one edit is stored
    (revision 2, by its author); the other is refused and stores nothing. Approvals bind to
    the winner's revision only: one for revision 1 is refused, and what runs is the winner's
    table, approved by two dbas other than the requester and the winner."""
    agent = make_agent(stores())
    winners = []
    with deciders(stores, tmp_path / "runs.txt", monkeypatch) as (carol, dave):
        editors = {"carol": (carol, CAROL), "dave": (dave, DAVE)}
        for n in range(4):
            tid = f"e{n}"
            agent.invoke(proposal("drop_table", table=f"old{n}"), thread_id=tid, reviewer=ALICE)
            for name, (w, _) in editors.items():
                w.send(f"task {tid} " + json.dumps(edit("drop_table", 1, table=f"{name}{n}")))
            assert [carol.recv(60), dave.recv(60)] == ["armed", "armed"]
            for w in (carol, dave):
                w.send("go")
            outcome = {"carol": carol.recv(120), "dave": dave.recv(120)}
            [winner] = [k for k, v in outcome.items() if v == "result partial"]
            [loser] = [k for k in outcome if k != winner]
            assert outcome[loser] in ("result conflict", "result refused ThreadBusy",
                                      "result refused StaleRevision"), outcome
            winners.append(winner)
            action, cfg = pending(agent, tid)
            assert (action.args, cfg.revision, cfg.edited_by) == (
                {"table": f"{winner}{n}"}, 2, winner)
            assert decisions(agent, tid) == [("approval_recorded", winner, 1)]
            # an approval made for what was shown before the edits does not count
            before = snapshot(agent, tid)
            with pytest.raises(StaleRevision):
                agent.resume(tid, [approve(1)], reviewer=BOB)
            assert snapshot(agent, tid) == before
            with pytest.raises(NotAuthorized):  # the editor does not approve their own edit
                agent.resume(tid, [approve(2)], reviewer=editors[winner][1])
            agent.resume(tid, [approve(2)], reviewer=BOB)
            last = editors[loser][1]
            assert agent.resume(tid, [approve(2)], reviewer=last).status == "completed"
            assert executions()[-1] == f"drop_table {winner}{n}"
            assert decisions(agent, tid) == [("approval_recorded", winner, 1),
                                             ("approval_recorded", "bob", 2),
                                             ("decision", loser, 2)]
    assert executions() == [f"drop_table {w}{n}" for n, w in enumerate(winners)]
