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

import asyncio
import json
import subprocess
import sys
import textwrap
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from interlock import (
    Agent,
    Checkpointer,
    HumanInTheLoop,
    InterlockWarning,
    InterruptOn,
    InvalidDecision,
    Middleware,
    ModelTurn,
    NotAuthorized,
    Reviewer,
    ScriptedModel,
    SqliteCheckpointer,
    StaleRevision,
    interrupt,
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

def _hitl_agent(db: Path | Checkpointer, policy: InterruptOn,
                started_by: Reviewer | None = None, calls: int = 1) -> Agent:
    script: list[Any] = []
    for i in range(calls):
        script += [{"name": "transfer", "args": {"account": "acme", "amount": i + 1}}, "done"]
    return Agent(model=ScriptedModel(script), tools=[transfer],
                 middleware=[HumanInTheLoop(interrupt_on={"transfer": policy})],
                 checkpointer=SqliteCheckpointer(db) if isinstance(db, Path) else db)


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

def _sql_child(policy: str, decide: str) -> str:
    """An agent module whose ``execute_sql`` runs ``DELETE FROM t`` under ``policy`` (an
    ``InterruptOn(...)`` expression); run as ``child`` it decides with ``decide`` (statements on
    ``a``) and hangs in the tool; run otherwise, ``make()`` builds the same agent."""
    return textwrap.dedent("""
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
            return Agent(model=ScriptedModel([{"name": "execute_sql",
                                               "args": {"query": "DELETE FROM t"}, "id": "s1"},
                                              "done"]),
                         tools=[execute_sql],
                         middleware=[HumanInTheLoop(interrupt_on={"execute_sql": POLICY})],
                         checkpointer=SqliteCheckpointer(DB))

        if sys.argv[3] == "child":
            a = make()
    """).replace("POLICY", policy) + textwrap.indent(textwrap.dedent(decide), "    ")


CHILD = _sql_child(
    'InterruptOn(allowed_decisions=["approve", "reject"], reviewers=["dba"], approvals=2)', """
    a.invoke("go", thread_id="u", reviewer=Reviewer("dan", frozenset({"dba"})))
    a.resume("u", [{"type": "approve"}], reviewer=Reviewer("dan", frozenset({"dba"})))
    a.resume("u", [{"type": "approve"}], reviewer=Reviewer("dora", frozenset({"dba"})))
""")


def _crash_then(tmp_path: Path, agent_source: str, check: str) -> dict[str, Any]:
    """Run ``agent_source`` as a child process until its tool starts, kill it, then run
    ``check`` (which sees ``make()`` and prints one JSON line) in a new process."""
    script = tmp_path / "agent_child.py"
    script.write_text(agent_source)
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
    source = (f"import sys\nsys.argv = [sys.argv[0], {str(db)!r}, {str(mark)!r}, 'parent']\n"
              f"exec(open({str(script)!r}).read())\n" + textwrap.dedent(check))
    out = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    seen: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return seen


ASK_AGAIN = """
    import json
    from interlock import NotAuthorized, Reviewer
    a = make()
    a.recover("u")
    cfg = a.get_thread("u").interrupts[0].value.review_configs[0]
    out = {"reviewers": cfg.reviewers, "approvals": cfg.approvals}
    try:
        a.resume("u", [{"type": "approve"}], reviewer=Reviewer("eve", frozenset({WRONG})))
        out["wrong_role"] = "ran"
    except NotAuthorized:
        out["wrong_role"] = "refused"
    r = a.resume("u", [{"type": "approve"}], reviewer=Reviewer("dan", frozenset({RIGHT})))
    out["after_one"] = r.status
    r = a.resume("u", [{"type": "approve"}], reviewer=Reviewer("dora", frozenset({RIGHT})))
    out["after_two"] = r.status
    print(json.dumps(out))
"""


@pytest.mark.slow
def test_the_outcome_unknown_question_keeps_the_tools_roles_and_quorum(tmp_path: Path) -> None:
    seen = _crash_then(tmp_path, CHILD, ASK_AGAIN.replace("WRONG", "'intern'").replace(
        "RIGHT", "'dba'"))
    assert seen == {"reviewers": ["dba"], "approvals": 2, "wrong_role": "refused",
                    "after_one": "interrupted", "after_two": "completed"}
    assert (tmp_path / "mark.ran").read_text() == "DELETE FROM t\n"


EDITED_CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from interlock import (Agent, HumanInTheLoop, InterruptOn, Middleware, ModelTurn, Reviewer,
                           ScriptedModel, SqliteCheckpointer, tool)

    DB, MARK = Path(sys.argv[1]), Path(sys.argv[2])

    @tool
    def lookup(account: str) -> str:
        \"\"\"Look an account up.\"\"\"
        return "ok"

    @tool
    def transfer(account: str, amount: int) -> str:
        \"\"\"Transfer money.\"\"\"
        if sys.argv[3] == "child":
            MARK.write_text("started")
            time.sleep(60)
        with open(str(MARK) + ".ran", "a") as f:
            f.write(f"{account} {amount}\\n")
        return "sent"

    class TransferPolicy(Middleware):
        def after_model(self, turn: ModelTurn) -> None:
            for call in turn.calls:
                if call.name == "transfer":
                    turn.review(call, description="transfer", reviewers=["finance"],
                                approvals=2, allowed_decisions=["approve", "reject"])

    def make():
        return Agent(model=ScriptedModel([{"name": "lookup", "args": {"account": "acme"},
                                           "id": "c1"}, "done"]),
                     tools=[lookup, transfer],
                     middleware=[HumanInTheLoop(interrupt_on={
                         "lookup": InterruptOn(reviewers=["ops"])}), TransferPolicy()],
                     checkpointer=SqliteCheckpointer(DB))

    if sys.argv[3] == "child":
        a = make()
        a.invoke("go", thread_id="u")
        a.resume("u", [{"type": "edit", "revision": 1, "edited_action": {
            "name": "transfer", "args": {"account": "offshore", "amount": 900000}}}],
            reviewer=Reviewer("olga", frozenset({"ops"})))
        for who in ("fred", "fiona"):
            a.resume("u", [{"type": "approve", "revision": 2}],
                     reviewer=Reviewer(who, frozenset({"finance"})))
""")


@pytest.mark.slow
def test_the_outcome_unknown_question_after_an_edit_keeps_the_rules_of_what_ran(
        tmp_path: Path) -> None:
    # an ops reviewer edited a lookup into a transfer that needs two finance approvals; the
    # process died while the transfer ran: running it again needs the same
    seen = _crash_then(tmp_path, EDITED_CHILD, ASK_AGAIN.replace("WRONG", "'ops'").replace(
        "RIGHT", "'finance'"))
    assert seen == {"reviewers": ["finance"], "approvals": 2, "wrong_role": "refused",
                    "after_one": "interrupted", "after_two": "completed"}
    assert (tmp_path / "mark.ran").read_text() == "offshore 900000\n"


class BudgetGuard(Middleware):
    """Asks the budget owner (``interrupt()``) about transfers over 10,000."""

    def after_model(self, turn: ModelTurn) -> None:
        for call in turn.calls:
            big = call.name == "transfer" and call.args.get("amount", 0) > 10000
            if big and interrupt({"question": f"Budget owner: allow {call.args['amount']}?"}
                                 ) != "yes":
                turn.reject(call, "the budget owner said no")


def test_an_edit_into_a_call_the_policy_would_ask_about_is_refused(tmp_path: Path) -> None:
    agent = Agent(model=_model(500), tools=[transfer],
                  middleware=[BudgetGuard(), HumanInTheLoop(interrupt_on={
                      "transfer": InterruptOn(reviewers=["ops"])})],
                  checkpointer=SqliteCheckpointer(tmp_path / "a.db"))
    agent.invoke("pay", thread_id="t")
    version = agent.get_thread("t").version
    with pytest.raises(InvalidDecision, match="asks a question about transfer"):
        agent.resume("t", _edit("acme", 900000), reviewer=OLGA)
    assert agent.get_thread("t").version == version and RAN == []
    agent.resume("t", _edit("acme", 700), reviewer=OLGA)  # under the budget: as before
    assert RAN == [("acme", 700)]


def test_an_older_process_never_gives_a_waiting_call_to_its_own_roles(tmp_path: Path) -> None:
    # the newer worker stored the call for dba; a process on the older policy (ops) decides
    new = _hitl_agent(tmp_path / "a.db", InterruptOn(reviewers=["dba"]))
    new.invoke("pay", thread_id="t")
    old = _hitl_agent(tmp_path / "a.db", InterruptOn(reviewers=["ops"]))
    with pytest.raises(NotAuthorized, match="dba"):
        old.resume("t", [{"type": "approve"}], reviewer=OLGA)
    assert RAN == []
    old.resume("t", [{"type": "approve"}], reviewer=Reviewer("dan", frozenset({"dba"})))
    assert RAN == [("acme", 1)]


class Counting(Middleware):
    """Counts the calls the model proposes (not the edits reviewers make)."""

    seen = 0

    def after_model(self, turn: ModelTurn) -> None:
        if not turn.editing:
            Counting.seen += len(turn.calls)


def test_hooks_are_told_when_they_judge_an_edit(tmp_path: Path) -> None:
    Counting.seen = 0
    agent = Agent(model=_model(5), tools=[transfer],
                  middleware=[Counting(), AmountPolicy()],
                  checkpointer=SqliteCheckpointer(tmp_path / "a.db"))
    agent.invoke("pay", thread_id="t")
    r = agent.resume("t", _edit("acme", 6), reviewer=OLGA)  # the editor counts: it runs
    assert r.status == "completed" and Counting.seen == 1 and RAN == [("acme", 6)]


def test_a_remembered_approval_made_by_the_application_applies_to_a_role_gated_tool(
        tmp_path: Path) -> None:
    agent = _hitl_agent(tmp_path / "a.db", InterruptOn(reviewers=["ops"]), calls=2)
    agent.invoke("pay", thread_id="t")
    agent.resume("t", [{"type": "approve", "remember": "thread"}])  # no reviewer: the app
    r = agent.invoke("again", thread_id="t")
    assert r.status == "completed" and RAN == [("acme", 1), ("acme", 2)]


# -- the process that runs the call judges it too -------------------------------------------


@pytest.mark.postgres
@pytest.mark.parametrize("newer", [
    InterruptOn(approvals=2), InterruptOn(reviewers=["finance"]),
    InterruptOn(self_approval=False)])
def test_a_worker_on_a_stricter_policy_asks_again_instead_of_running(
        tmp_path: Path, newer: InterruptOn) -> None:
    """The API process (older policy: one approval by anyone) stores ops's approval with the
    run queued; the worker (newer, stricter policy) does not run the call on it: it asks
    again under the stricter rules, and runs the call once those are met."""
    from conftest import StoreFactory, require_postgres
    from interlock.worker import Worker

    require_postgres()
    pg = StoreFactory("postgres", tmp_path)
    try:
        api = _hitl_agent(pg(), InterruptOn())
        runner = _hitl_agent(pg(), newer)
        worker = Worker(runner)

        async def main() -> None:
            # paused under the older policy (before the worker was redeployed)
            paused = await api.ainvoke("pay", thread_id="w", reviewer=OLGA)
            await api.aresume("w", [{"type": "approve"}], reviewer=OLGA,
                              interrupt_id=paused.interrupts[0].id, handoff=True)
            assert await worker.run_once() == 1
            again = await api.aget_thread("w")
            assert again.status == "interrupted" and RAN == []
            request = again.interrupts[0].value
            assert request.action_requests[0].reason == "policy_changed"
            cfg = request.review_configs[0]
            assert (cfg.approvals or 1, cfg.reviewers, cfg.self_approval) == (
                newer.approvals, list(newer.reviewers) if newer.reviewers else None,
                None if newer.self_approval else False)
            # decided under the stricter rules (by the older API process): then it runs
            deciders = [FRED, FIONA][:newer.approvals]
            for who in deciders:
                fresh = await api.aget_thread("w")
                await api.aresume("w", [{"type": "approve"}], reviewer=who,
                                  interrupt_id=fresh.interrupts[0].id, handoff=True)
                await worker.run_once()
            done = await api.aget_thread("w")
            assert done.status == "completed" and RAN == [("acme", 1)]

        asyncio.run(main())
    finally:
        pg.cleanup()


@pytest.mark.parametrize("hitl_first", [True, False])
def test_two_hooks_reviews_of_one_call_hold_together_in_any_order(
        tmp_path: Path, hitl_first: bool) -> None:
    hitl = HumanInTheLoop(interrupt_on={"transfer": InterruptOn(
        allowed_decisions=["approve", "reject"], expires_after=timedelta(hours=1))})
    middleware = [hitl, AmountPolicy()] if hitl_first else [AmountPolicy(), hitl]
    agent = Agent(model=_model(5000), tools=[transfer], middleware=middleware,
                  checkpointer=SqliteCheckpointer(tmp_path / "a.db"))
    agent.invoke("pay", thread_id="t")
    cfg = _config(agent, "t")
    assert (cfg.reviewers, cfg.approvals, cfg.allowed_decisions) == (
        ["finance"], 2, ["approve", "reject"])
    assert cfg.expires_at is not None
    with pytest.raises(NotAuthorized):
        agent.resume("t", [{"type": "approve"}], reviewer=OLGA)
    agent.resume("t", [{"type": "approve"}], reviewer=FRED)
    assert RAN == []
    agent.resume("t", [{"type": "approve"}], reviewer=FIONA)
    assert RAN == [("acme", 5000)]


# -- re-asked calls: under the stricter of the stored rules and the policy, nothing looser ---


def _queue_and_run(api: Agent, worker: Any, thread_id: str, decisions: Any,
                   reviewer: Reviewer) -> Any:
    """``decisions`` stored by ``api`` with the run queued, then one pass of ``worker``."""
    async def go() -> Any:
        paused = await api.aget_thread(thread_id)
        await api.aresume(thread_id, decisions, reviewer=reviewer,
                          interrupt_id=paused.interrupts[0].id, handoff=True)
        await worker.run_once()
        return await api.aget_thread(thread_id)
    return asyncio.run(go())


@pytest.fixture
def pg_pair(tmp_path: Path) -> Any:
    from conftest import StoreFactory, require_postgres

    require_postgres()
    pg = StoreFactory("postgres", tmp_path)
    yield pg
    pg.cleanup()


class Guard(Middleware):
    """No respond, never remembered, within ten minutes."""

    def after_model(self, turn: ModelTurn) -> None:
        for call in turn.calls:
            turn.review(call, description="guarded",
                        allowed_decisions=["approve", "edit", "reject"],
                        allow_remember=False, expires_after=timedelta(minutes=10))


@pytest.mark.postgres
def test_a_re_asked_call_keeps_the_stored_rules_and_its_revision(pg_pair: Any) -> None:
    from interlock.worker import Worker

    def make(policy: InterruptOn) -> Agent:
        return Agent(model=_model(1), tools=[transfer], checkpointer=pg_pair(),
                     middleware=[HumanInTheLoop(interrupt_on={"transfer": policy}), Guard()])

    api, runner = make(InterruptOn(approvals=2)), make(InterruptOn(approvals=3))
    api.invoke("pay", thread_id="t")
    api.resume("t", _edit("acme", 100), reviewer=Reviewer("a", frozenset({"ops"})))
    seen_by_d = _config(api, "t").revision  # revision 2: amount 100
    api.resume("t", _edit("acme", 999, revision=2), reviewer=Reviewer("b", frozenset()))
    # revision 3's second approval, stored by the API process; the worker's policy needs three
    state = _queue_and_run(api, Worker(runner), "t", [{"type": "approve", "revision": 3}],
                           Reviewer("c", frozenset()))
    assert state.status == "interrupted" and RAN == []
    request = state.interrupts[0].value
    cfg = request.review_configs[0]
    assert request.action_requests[0].reason == "policy_changed"
    assert (cfg.revision, cfg.approvals, cfg.approved_by) == (3, 3, None)
    assert request.action_requests[0].args == {"account": "acme", "amount": 999}
    # an approval of revision 2 (amount 100) never counts for it
    with pytest.raises(StaleRevision):
        api.resume("t", [{"type": "approve", "revision": seen_by_d}],
                   reviewer=Reviewer("d", frozenset()))
    assert _config(api, "t").approved_by is None
    assert (cfg.allowed_decisions, cfg.allow_remember) == (["approve", "edit", "reject"], False)
    assert cfg.expires_at is not None


@pytest.mark.postgres
def test_a_worker_that_forbids_edits_does_not_run_an_edit_it_did_not_allow(
        pg_pair: Any) -> None:
    from interlock.worker import Worker

    api = _hitl_agent(pg_pair(), InterruptOn())
    runner = _hitl_agent(pg_pair(), InterruptOn(allowed_decisions=["approve", "reject"]))
    api.invoke("pay", thread_id="t")
    state = _queue_and_run(api, Worker(runner), "t", _edit("offshore", 90000), OLGA)
    assert state.status == "interrupted" and RAN == []
    assert state.interrupts[0].value.action_requests[0].reason == "policy_changed"


@pytest.mark.postgres
def test_a_re_asked_per_call_request_stays_a_request_of_its_own(pg_pair: Any) -> None:
    from interlock.worker import Worker

    def make(policy: InterruptOn) -> Agent:
        return Agent(
            model=ScriptedModel([[{"name": "transfer", "args": {"account": "a", "amount": 1}},
                                  {"name": "transfer", "args": {"account": "b", "amount": 2}}],
                                 "done"]),
            tools=[transfer], checkpointer=pg_pair(),
            middleware=[HumanInTheLoop(interrupt_on={"transfer": policy},
                                       interrupt_mode="per_call")])

    api, runner = make(InterruptOn()), make(InterruptOn(approvals=2))
    api.invoke("pay", thread_id="t")
    state = _queue_and_run(api, Worker(runner), "t", [{"type": "approve"}], OLGA)
    assert RAN == []
    assert [(i.origin, len(i.value.action_requests)) for i in state.interrupts] == [
        ("per_call", 1), ("per_call", 1)]


def test_an_edit_only_policy_runs_the_edit(tmp_path: Path) -> None:
    agent = _hitl_agent(tmp_path / "a.db", InterruptOn(allowed_decisions=["edit", "reject"]))
    agent.invoke("pay", thread_id="t")
    r = agent.resume("t", _edit("acme", 6), reviewer=OLGA)
    assert r.status == "completed" and RAN == [("acme", 6)]


class SmallTransfers(Middleware):
    def after_model(self, turn: ModelTurn) -> None:
        for call in turn.calls:
            if call.args.get("amount", 0) <= 1000:
                turn.review(call, description="small", reviewers=["ops", "finance"])


def test_a_policy_whose_when_did_not_hold_does_not_judge_the_call(tmp_path: Path) -> None:
    big_only = InterruptOn(reviewers=["finance"], when=lambda c: c.args["amount"] > 1000)
    agent = Agent(model=_model(5), tools=[transfer],
                  middleware=[HumanInTheLoop(interrupt_on={"transfer": big_only}),
                              SmallTransfers()],
                  checkpointer=SqliteCheckpointer(tmp_path / "a.db"))
    agent.invoke("pay", thread_id="t")
    assert _config(agent, "t").reviewers == ["ops", "finance"]
    r = agent.resume("t", [{"type": "approve"}], reviewer=OLGA)
    assert r.status == "completed" and RAN == [("acme", 5)]


class RejectOrRespond(Middleware):
    def after_model(self, turn: ModelTurn) -> None:
        for call in turn.calls:
            turn.review(call, description="no approval", allowed_decisions=["reject", "respond"],
                        reviewers=["finance"])


def test_two_hooks_with_no_decision_or_role_in_common(tmp_path: Path) -> None:
    hitl = HumanInTheLoop(interrupt_on={"transfer": InterruptOn(
        allowed_decisions=["approve", "edit"], reviewers=["ops"])})
    for middleware in ([hitl, RejectOrRespond()], [RejectOrRespond(), hitl]):
        RAN.clear()
        agent = Agent(model=_model(5), tools=[transfer], middleware=middleware,
                      checkpointer=SqliteCheckpointer(tmp_path / f"{len(RAN)}{id(middleware)}.db"))
        with pytest.warns(InterlockWarning, match="none in common"):
            agent.invoke("pay", thread_id="t")
        assert _config(agent, "t").allowed_decisions == ["reject"]
        with pytest.raises((InvalidDecision, NotAuthorized)):
            agent.resume("t", [{"type": "approve"}], reviewer=OLGA)
        assert RAN == []


class ReviewAll(Middleware):
    def after_model(self, turn: ModelTurn) -> None:
        for call in turn.calls:
            turn.review(call, description="guarded transfer")


@pytest.mark.parametrize("guard_first", [True, False])
def test_a_when_policy_that_reviewed_a_call_with_another_hook_judges_it_after_a_redeploy(
        tmp_path: Path, guard_first: bool) -> None:
    def make(approvals: int) -> Agent:
        hitl = HumanInTheLoop(interrupt_on={"transfer": InterruptOn(
            reviewers=["finance"], approvals=approvals,
            when=lambda c: c.args["amount"] > 1000)})
        return Agent(model=_model(90000), tools=[transfer],
                     middleware=[ReviewAll(), hitl] if guard_first else [hitl, ReviewAll()],
                     checkpointer=SqliteCheckpointer(tmp_path / "a.db"))

    make(1).invoke("pay", thread_id="t")
    r = make(2).resume("t", [{"type": "approve"}], reviewer=FRED)
    assert r.status == "interrupted" and RAN == []


def test_two_hooks_with_no_role_in_common_allow_only_a_rejection(tmp_path: Path) -> None:
    class FinanceOnly(Middleware):
        def after_model(self, turn: ModelTurn) -> None:
            for call in turn.calls:
                turn.review(call, description="finance", reviewers=["finance"])

    agent = Agent(model=_model(5), tools=[transfer],
                  middleware=[HumanInTheLoop(interrupt_on={"transfer": InterruptOn(
                      reviewers=["ops"])}), FinanceOnly()],
                  checkpointer=SqliteCheckpointer(tmp_path / "a.db"))
    with pytest.warns(InterlockWarning, match="may only be rejected"):
        agent.invoke("pay", thread_id="t")
    for who in (OLGA, FRED):
        with pytest.raises(InvalidDecision):
            agent.resume("t", [{"type": "approve"}], reviewer=who)
    r = agent.resume("t", [{"type": "reject"}], reviewer=OLGA)
    assert r.status == "completed" and RAN == []


EDIT_ONLY_CHILD = _sql_child('InterruptOn(allowed_decisions=["edit", "reject"])', """
    a.invoke("go", thread_id="u")
    a.resume("u", [{"type": "edit", "edited_action": {
        "name": "execute_sql", "args": {"query": "DELETE FROM t WHERE id=1"}}}],
        reviewer=Reviewer("dora", frozenset()))
""")


@pytest.mark.slow
def test_run_it_again_on_an_edit_only_tool_runs_once(tmp_path: Path) -> None:
    seen = _crash_then(tmp_path, EDIT_ONLY_CHILD, """
        import json
        a = make()
        a.recover("u")
        r = a.resume("u", [{"type": "approve"}])
        print(json.dumps({"status": r.status}))
    """)
    assert seen == {"status": "completed"}
    assert (tmp_path / "mark.ran").read_text() == "DELETE FROM t WHERE id=1\n"


@pytest.mark.postgres
def test_the_audit_verifies_after_an_edited_call_was_asked_again(pg_pair: Any) -> None:
    from interlock.worker import Worker

    api = _hitl_agent(pg_pair(), InterruptOn())
    runner = _hitl_agent(pg_pair(), InterruptOn(reviewers=["finance"], approvals=2))
    api.invoke("pay", thread_id="t", reviewer=OLGA)
    state = _queue_and_run(api, Worker(runner), "t", _edit("b", 2), OLGA)
    assert state.interrupts[0].value.action_requests[0].reason == "policy_changed"
    for who in (FRED, FIONA):
        runner.resume("t", [{"type": "approve", "revision": 2}], reviewer=who)
    assert RAN == [("b", 2)]
    assert runner.verify_audit() == []
