"""`interlock review` in a real pseudo-terminal: an approval given on a panel that shows the
call as it was before a colleague's edit is refused (the terminal sends the revision it showed)
and the reviewer sees who changed what; the request comes back with the edited call, and
approving that runs it once."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pexpect
import pytest

from interlock import Agent, Reviewer, SqliteCheckpointer
from notify.agents import executions
from security.revision_agent import make_agent, proposal

from .helpers import child_env, cli_argv

TESTS = Path(__file__).resolve().parents[1]


def words(text: str) -> str:
    """A pattern for ``text`` that allows rich's line wrapping between the words."""
    return r"\s+".join(re.escape(w) for w in text.split())


def frank_reviews_a_payment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            thread_id: str) -> tuple[Agent, Any]:
    """A proposed payment (pay needs two finance approvals) on thread ``thread_id``, and
    ``interlock review`` as frank (finance) in a pseudo-terminal."""
    runs = tmp_path / "runs.txt"
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(runs))
    db = tmp_path / "db.sqlite"
    agent = make_agent(SqliteCheckpointer(db))
    agent.invoke(proposal("pay", account="acme", amount=100), thread_id=thread_id)
    env = child_env(TERM="dumb", COLUMNS="120", LINES="50", INTERLOCK_TEST_RUNS=str(runs))
    argv = cli_argv("review", "--agent", "security.revision_agent:server_agent",
                    "--db", f"sqlite:///{db}", "--reviewer", "frank", "--role", "finance")
    child = pexpect.spawn(argv[0], argv[1:], env=env, encoding="utf-8", timeout=60,
                          dimensions=(50, 120), cwd=str(TESTS))
    return agent, child


def test_terminal_approval_of_a_stale_panel_is_refused(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    agent, child = frank_reviews_a_payment(tmp_path, monkeypatch, "t")
    try:
        child.expect(r"\[q\] quit\s*\r?\n> ")
        assert "acme" in child.before
        # while frank looks at the panel, gina changes the payment
        agent.resume("t", [{"type": "edit", "edited_action": {
            "name": "pay", "args": {"account": "offshore-9", "amount": 90000}}}],
            reviewer=Reviewer("gina", frozenset({"finance"})))
        rows = len(agent.audit("t"))
        child.send("a")
        # pay needs two approvals: frank's, as shown, would be the first
        child.expect(words("Approve pay? This is approval 1 of 2: it runs once 1 more "
                           "reviewer approves."))
        child.send("y")
        child.expect(words("'gina' edited the call since then: revision 2"))
        assert executions() == [] and len(agent.audit("t")) == rows
        child.expect(r"\[q\] quit\s*\r?\n> ")
        panel = child.before
        assert "offshore-9" in panel and "revision 2, edited by gina" in panel
        child.send("a")
        child.expect(words("Approve pay? It runs at once."))
        child.send("y")
        child.expect("No more pending")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert executions() == ["pay offshore-9 90000"]
    (row,) = [a for a in agent.audit("t") if a.kind == "decision"]
    assert (row.actor, row.data["revision"]) == ("frank", 2)
    agent.close()


def test_an_approval_that_waits_for_another_reviewer_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pay needs two approvals: frank's first one is counted and nothing runs; the terminal
    says so before and after, does not offer 'remember' (a standing rule would skip the second
    approval) and does not show him the call again; his session counts it as waiting."""
    agent, child = frank_reviews_a_payment(tmp_path, monkeypatch, "q")
    try:
        child.expect(r"\[q\] quit\s*\r?\n> ")
        assert "[a] approve" in child.before and "[m]" not in child.before
        child.send("a")
        child.expect(words("Approve pay? This is approval 1 of 2: it runs once 1 more "
                           "reviewer approves."))
        child.send("y")
        child.expect(words("your approval is counted; the call runs when the other "
                           "approvals it needs are given"))
        child.expect("No more pending")
        child.expect(words("Session: 1 approved (waiting for other reviewers)."))
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert executions() == []
    (config,) = agent.get_thread("q").interrupts[0].value.review_configs
    assert [a.by for a in config.approved_by or []] == ["frank"]
    agent.close()


def test_an_approval_given_meanwhile_is_counted_before_frank_is_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While frank looks at the payment (no approval yet: "approval 1 of 2" would be his),
    gina approves it. When frank presses a, the terminal reads the call again: his approval
    is the second, so it says the call runs at once (not "this is approval 1 of 2"), and
    answering yes runs it once."""
    agent, child = frank_reviews_a_payment(tmp_path, monkeypatch, "g")
    try:
        child.expect(r"\[q\] quit\s*\r?\n> ")
        agent.resume("g", [{"type": "approve"}],
                     reviewer=Reviewer("gina", frozenset({"finance"})))
        assert executions() == []
        child.send("a")
        child.expect(words("Approve pay? It runs at once."))
        assert "approval 1 of 2" not in child.before
        child.send("y")
        child.expect("No more pending")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert executions() == ["pay acme 100"]
    agent.close()
