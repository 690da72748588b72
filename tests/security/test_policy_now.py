"""Invariant 1: an approval counts only under the policy of the tool and arguments that will
run, whichever process decides and whenever.

* an edit is judged by the agent's own policy hooks as the call it makes (a custom
  middleware's ``turn.review(...)`` rules included), never looser than the revision it
  replaces for the same tool, and refused where that policy rejects the edited call;
* a call that paused under one policy and is decided after the agent was redeployed with a
  stricter one (or by an API process still running the older one) is decided under the
  stricter of the two;
* a remembered approval lets a call through only while its creator could approve that call
  alone under the tool's policy now;
* the "outcome unknown" question after a crash is decided by whoever could approve the call:
  the tool's roles, approvals and separation of duties carry over.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from interlock import (
    Agent,
    HumanInTheLoop,
    InterruptOn,
    InvalidDecision,
    Middleware,
    ModelTurn,
    NotAuthorized,
    Reviewer,
    ScriptedModel,
    SqliteCheckpointer,
    tool,
)

OLGA = Reviewer("olga", frozenset({"ops"}))
FRED = Reviewer("fred", frozenset({"finance"}))
FIONA = Reviewer("fiona", frozenset({"finance"}))

RAN: list[tuple[str, int]] = []


@tool
def transfer(account: str, amount: int) -> str:
    """Transfer money."""
    RAN.append((account, amount))
    return "ok"


class AmountPolicy(Middleware):
    """A custom policy: over 1000 needs two finance approvals; smaller ones one ops or
    finance approval; a transfer to 'blocked' is refused outright."""

    def after_model(self, turn: ModelTurn) -> None:
        for call in turn.calls:
            if call.args.get("account") == "blocked":
                turn.reject(call, "transfers to this account are not allowed")
            elif call.args.get("amount", 0) > 1000:
                turn.review(call, description="large transfer", reviewers=["finance"],
                            approvals=2, allowed_decisions=["approve", "edit", "reject"])
            else:
                turn.review(call, description="small transfer", reviewers=["ops", "finance"],
                            allowed_decisions=["approve", "edit", "reject"])


def _model(amount: int) -> ScriptedModel:
    return ScriptedModel([{"name": "transfer", "args": {"account": "acme", "amount": amount}},
                          "done"])


def _edit(account: str, amount: int, revision: int = 1) -> list[dict[str, Any]]:
    return [{"type": "edit", "revision": revision, "edited_action": {
        "name": "transfer", "args": {"account": account, "amount": amount}}}]


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def _config(agent: Agent, thread_id: str) -> Any:
    return agent.get_thread(thread_id).interrupts[0].value.review_configs[0]


def test_an_edit_is_reviewed_under_the_custom_policy_of_the_call_it_makes(
        tmp_path: Path) -> None:
    agent = Agent(model=_model(10), tools=[transfer], middleware=[AmountPolicy()],
                  checkpointer=SqliteCheckpointer(tmp_path / "a.db"))
    agent.invoke("pay", thread_id="t")
    # an ops reviewer turns a small transfer into a large one: the new revision needs two
    # finance approvals, and the ops reviewer's edit is none of them
    r = agent.resume("t", _edit("offshore", 900000), reviewer=OLGA)
    assert r.status == "interrupted" and RAN == []
    cfg = _config(agent, "t")
    assert (cfg.revision, cfg.reviewers, cfg.approvals, cfg.approved_by) == (
        2, ["finance"], 2, None)
    agent.resume("t", [{"type": "approve", "revision": 2}], reviewer=FRED)
    assert RAN == []
    r = agent.resume("t", [{"type": "approve", "revision": 2}], reviewer=FIONA)
    assert r.status == "completed" and RAN == [("offshore", 900000)]


def test_a_trivial_edit_never_skips_the_quorum_of_the_call_it_replaces(tmp_path: Path) -> None:
    agent = Agent(model=_model(50000), tools=[transfer], middleware=[AmountPolicy()],
                  checkpointer=SqliteCheckpointer(tmp_path / "a.db"))
    agent.invoke("pay", thread_id="t")
    with pytest.raises(NotAuthorized):
        agent.resume("t", [{"type": "approve"}], reviewer=OLGA)
    r = agent.resume("t", _edit("acme", 50001), reviewer=FRED)
    assert r.status == "interrupted" and RAN == []
    cfg = _config(agent, "t")
    assert cfg.approvals == 2 and [a.by for a in cfg.approved_by] == ["fred"]
    # an edit down to a small amount of the same tool stays under the stricter rules too
    r = agent.resume("t", _edit("acme", 5, revision=2), reviewer=FIONA)
    assert r.status == "interrupted" and RAN == []
    assert _config(agent, "t").approvals == 2
    agent.resume("t", [{"type": "approve", "revision": 3}], reviewer=FRED)
    assert RAN == [("acme", 5)]


def test_an_edit_into_a_call_the_policy_rejects_is_refused_and_changes_nothing(
        tmp_path: Path) -> None:
    agent = Agent(model=_model(10), tools=[transfer], middleware=[AmountPolicy()],
                  checkpointer=SqliteCheckpointer(tmp_path / "a.db"))
    agent.invoke("pay", thread_id="t")
    before = agent.get_thread("t")
    with pytest.raises(InvalidDecision, match="rejects transfer with these arguments"):
        agent.resume("t", _edit("blocked", 10), reviewer=OLGA)
    after = agent.get_thread("t")
    assert after.version == before.version and RAN == []
    assert _config(agent, "t").revision == 1


# -- a policy changed between the pause and the decision -----------------------------------

def _hitl_agent(db: Path, policy: InterruptOn, started_by: Reviewer | None = None,
                calls: int = 1) -> Agent:
    script: list[Any] = []
    for i in range(calls):
        script += [{"name": "transfer", "args": {"account": "acme", "amount": i + 1}}, "done"]
    return Agent(model=ScriptedModel(script), tools=[transfer],
                 middleware=[HumanInTheLoop(interrupt_on={"transfer": policy})],
                 checkpointer=SqliteCheckpointer(db))


@pytest.mark.parametrize("stricter, refusal", [
    (InterruptOn(approvals=2), None),
    (InterruptOn(reviewers=["finance"]), NotAuthorized),
    (InterruptOn(self_approval=False), NotAuthorized),
])
def test_a_call_paused_under_an_older_policy_is_decided_under_the_stricter(
        tmp_path: Path, stricter: InterruptOn, refusal: type[Exception] | None) -> None:
    old = _hitl_agent(tmp_path / "a.db", InterruptOn())
    old.invoke("pay", thread_id="t", reviewer=OLGA)
    new = _hitl_agent(tmp_path / "a.db", stricter)  # redeployed
    if refusal is not None:
        with pytest.raises(refusal):
            new.resume("t", [{"type": "approve"}], reviewer=OLGA)
        assert new.get_thread("t").status == "interrupted"
    else:
        r = new.resume("t", [{"type": "approve"}], reviewer=OLGA)
        assert r.status == "interrupted"
        assert [a.by for a in _config(new, "t").approved_by] == ["olga"]
        new.resume("t", [{"type": "approve"}], reviewer=FRED)
    ran: list[tuple[str, int]] = [] if refusal is not None else [("acme", 1)]
    assert ran == RAN


def test_decisions_and_remembering_a_newer_policy_forbids_are_refused(tmp_path: Path) -> None:
    old = _hitl_agent(tmp_path / "a.db", InterruptOn())
    old.invoke("pay", thread_id="t")
    new = _hitl_agent(tmp_path / "a.db", InterruptOn(allowed_decisions=["approve", "reject"],
                                                     allow_remember=False))
    with pytest.raises(InvalidDecision, match="does not allow"):
        new.resume("t", _edit("acme", 2))
    with pytest.raises(InvalidDecision, match="remember"):
        new.resume("t", [{"type": "approve", "remember": "thread"}])
    assert RAN == [] and new.remembered("t") == []


def test_a_process_on_the_older_policy_never_loosens_the_stored_rules(tmp_path: Path) -> None:
    # the worker that raised the request runs the newer policy (two approvals); an API
    # process still on the older one (one approval) takes an edit
    new = _hitl_agent(tmp_path / "a.db", InterruptOn(approvals=2))
    new.invoke("pay", thread_id="t")
    old = _hitl_agent(tmp_path / "a.db", InterruptOn())
    r = old.resume("t", _edit("offshore", 90000), reviewer=OLGA)
    assert r.status == "interrupted" and RAN == []
    assert _config(old, "t").approvals == 2
    old.resume("t", [{"type": "approve", "revision": 2}], reviewer=FRED)
    assert RAN == [("offshore", 90000)]


@pytest.mark.parametrize("stricter", [
    InterruptOn(approvals=2), InterruptOn(reviewers=["finance"]),
    InterruptOn(self_approval=False)])
def test_a_remembered_approval_lapses_where_its_creator_could_not_approve_alone(
        tmp_path: Path, stricter: InterruptOn) -> None:
    old = _hitl_agent(tmp_path / "a.db", InterruptOn(), calls=2)
    old.invoke("pay", thread_id="t", reviewer=OLGA)
    old.resume("t", [{"type": "approve", "remember": "thread"}], reviewer=OLGA)
    assert RAN == [("acme", 1)]
    new = _hitl_agent(tmp_path / "a.db", stricter, calls=2)
    r = new.invoke("again", thread_id="t", reviewer=OLGA)
    assert r.status == "interrupted" and RAN == [("acme", 1)]
    assert not any(a.kind == "auto_approved" for a in new.audit("t"))


def test_a_remembered_approval_still_applies_under_the_same_policy(tmp_path: Path) -> None:
    agent = _hitl_agent(tmp_path / "a.db", InterruptOn(reviewers=["ops"]), calls=2)
    agent.invoke("pay", thread_id="t", reviewer=OLGA)
    agent.resume("t", [{"type": "approve", "remember": "thread"}], reviewer=OLGA)
    r = agent.invoke("again", thread_id="t", reviewer=OLGA)
    assert r.status == "completed" and RAN == [("acme", 1), ("acme", 2)]


# -- "outcome unknown" after a crash ----------------------------------------------------------

CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from interlock import (Agent, HumanInTheLoop, InterruptOn, Reviewer, ScriptedModel,
                           SqliteCheckpointer, tool)

    DB, MARK = Path(sys.argv[1]), Path(sys.argv[2])

    @tool
    def execute_sql(query: str) -> str:
        \"\"\"Run SQL.\"\"\"
        if sys.argv[3] == "child":
            MARK.write_text("started")
            time.sleep(60)
        with open(str(MARK) + ".ran", "a") as f:
            f.write(query + "\\n")
        return "ok"

    def make():
        return Agent(model=ScriptedModel([{"name": "execute_sql", "args": {"query": "DELETE FROM t"},
                                           "id": "s1"}, "done"]),
                     tools=[execute_sql],
                     middleware=[HumanInTheLoop(interrupt_on={"execute_sql": InterruptOn(
                         allowed_decisions=["approve", "reject"], reviewers=["dba"],
                         approvals=2)})],
                     checkpointer=SqliteCheckpointer(DB))

    if sys.argv[3] == "child":
        a = make()
        a.invoke("go", thread_id="u", reviewer=Reviewer("dan", frozenset({"dba"})))
        a.resume("u", [{"type": "approve"}], reviewer=Reviewer("dan", frozenset({"dba"})))
        a.resume("u", [{"type": "approve"}], reviewer=Reviewer("dora", frozenset({"dba"})))
""")


@pytest.mark.slow
def test_the_outcome_unknown_question_keeps_the_tools_roles_and_quorum(tmp_path: Path) -> None:
    script = tmp_path / "agent_child.py"
    script.write_text(CHILD)
    db, mark = tmp_path / "u.db", tmp_path / "mark"
    child = subprocess.Popen([sys.executable, str(script), str(db), str(mark), "child"])
    try:
        deadline = time.monotonic() + 30
        while not mark.exists():
            assert time.monotonic() < deadline and child.poll() is None
            time.sleep(0.05)
    finally:
        child.kill()
        child.wait()
    check = textwrap.dedent(f"""
        import json, sys
        sys.argv = [sys.argv[0], {str(db)!r}, {str(mark)!r}, "parent"]
        exec(open({str(script)!r}).read())
        from interlock import NotAuthorized, Reviewer
        a = make()
        a.recover("u")
        cfg = a.get_thread("u").interrupts[0].value.review_configs[0]
        out = {{"reviewers": cfg.reviewers, "approvals": cfg.approvals}}
        try:
            a.resume("u", [{{"type": "approve"}}], reviewer=Reviewer("eve", frozenset({{"intern"}})))
            out["intern"] = "ran"
        except NotAuthorized:
            out["intern"] = "refused"
        r = a.resume("u", [{{"type": "approve"}}], reviewer=Reviewer("dan", frozenset({{"dba"}})))
        out["after_one"] = r.status
        r = a.resume("u", [{{"type": "approve"}}], reviewer=Reviewer("dora", frozenset({{"dba"}})))
        out["after_two"] = r.status
        print(json.dumps(out))
    """)
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    import json
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"reviewers": ["dba"], "approvals": 2, "intern": "refused",
                    "after_one": "interrupted", "after_two": "completed"}
    assert (tmp_path / "mark.ran").read_text() == "DELETE FROM t\n"
