"""`interlock review` does what the web inbox does, in a real pseudo-terminal: a data-changing
approval and "remember" ask first (no sends nothing), a finished run takes a follow-up message
from whoever may post to the thread, --tool and --search narrow the queue, someone else's
earlier decision is named (who, what), and --watch waits for new requests."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pexpect
import pytest

from interlock.demo import build_agent, prepare
from interlock.demo.model import SCENARIOS

from .helpers import child_env, cli_argv, demo_dir, sample_rows

OLD_CANCELLED = ("SELECT COUNT(*) FROM orders WHERE status = 'cancelled' "
                 "AND created_at < '2024-01-01'")


def words(text: str) -> str:
    """A pattern for ``text`` that allows rich's line wrapping between the words."""
    return r"\s+".join(re.escape(w) for w in text.split())


def spawn(data: Path, *args: str) -> Any:
    env = child_env(INTERLOCK_DEMO_DIR=str(data), TERM="dumb", COLUMNS="120", LINES="50")
    argv = cli_argv("review", "--agent", "interlock.demo:agent", *args)
    return pexpect.spawn(argv[0], argv[1:], env=env, encoding="utf-8", timeout=60,
                         dimensions=(50, 120))


MENU = r"\[q\] quit\s*\r?\n> "


def approve(child: Any) -> None:
    """At the menu: approve, and say yes to the confirmation."""
    child.expect(MENU)
    child.send("a")
    child.expect(r"\[y\] yes, run it")
    child.send("y")


def test_approving_asks_first_and_no_sends_nothing(tmp_path: Path) -> None:
    data = demo_dir(tmp_path / "demo")
    before = sample_rows(data, OLD_CANCELLED)
    child = spawn(data, "--reviewer", "alice", "--thread", "cleanup-cancelled-orders")
    try:
        child.expect(MENU)
        child.send("a")
        child.expect(words("Approve execute_sql? It runs at once."))
        child.expect(r"\[y\] yes, run it\s+\[n\] no")
        child.send("n")
        child.expect("nothing was decided")
        child.expect(MENU)  # the same request again
        assert sample_rows(data, OLD_CANCELLED) == before  # no sent nothing
        child.send("a")
        child.expect(r"\[y\] yes, run it")
        child.send("y")
        child.expect(words("approved execute_sql"))
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    assert sample_rows(data, OLD_CANCELLED) == [(0,)]


def test_remember_asks_first(tmp_path: Path) -> None:
    data = demo_dir(tmp_path / "demo")
    child = spawn(data, "--reviewer", "alice", "--thread", "weekly-report")
    try:
        child.expect(MENU)
        child.send("m")
        child.expect(words("Approve every later send_email call in this thread?"))
        child.expect(words("run without anyone seeing them"))
        child.send("n")
        child.expect("nothing was decided")
        child.expect(MENU)
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    agent = build_agent(data)
    try:
        t = agent.get_thread("weekly-report")
        assert t.status == "interrupted" and t.remembered == []
    finally:
        agent.close()
    assert sample_rows(data, "SELECT COUNT(*) FROM outbox") == [(0,)]


def test_a_follow_up_message_after_the_run_finished(tmp_path: Path) -> None:
    data = demo_dir(tmp_path / "demo")
    # an admin may post to every thread (the demo's threads were started by the application)
    child = spawn(data, "--reviewer", "alice", "--role", "admin",
                  "--thread", "cleanup-cancelled-orders")
    try:
        approve(child)
        child.expect(r"\[f\] send the agent a follow-up message\s+\[n\] next request")
        child.send("f")
        child.expect("Message to the agent")
        child.sendline("How many are left now?")
        child.expect(words("follow-up sent"))
        child.expect(pexpect.EOF)
        output = child.before
    finally:
        child.close()
    assert child.exitstatus == 0, output
    agent = build_agent(data)
    try:
        users = [m.content for m in agent.get_thread("cleanup-cancelled-orders").messages
                 if m.role == "user"]
        assert users[-1] == "How many are left now?"
        [rec] = [r for r in agent.audit("cleanup-cancelled-orders") if r.kind == "run_started"
                 and r.actor == "alice"][-1:]
    finally:
        agent.close()
    assert rec.actor == "alice"


def test_a_reviewer_who_may_not_post_is_not_offered_a_follow_up(tmp_path: Path) -> None:
    data = demo_dir(tmp_path / "demo")
    child = spawn(data, "--reviewer", "bob", "--thread", "cleanup-cancelled-orders")
    try:
        approve(child)
        child.expect(pexpect.EOF)
        output = child.before
    finally:
        child.close()
    assert child.exitstatus == 0
    assert "follow-up" not in output and "approved execute_sql" in " ".join(output.split())


@pytest.mark.parametrize(("option", "threads"), [
    (("--tool", "send_email"), {"late-order-1042", "weekly-report"}),
    (("--search", "1042"), {"late-order-1042"}),
])
def test_filters_narrow_the_queue(tmp_path: Path, option: tuple[str, str],
                                  threads: set[str]) -> None:
    data = demo_dir(tmp_path / "demo")
    child = spawn(data, "--reviewer", "alice", *option)
    seen: set[str] = set()
    counts: list[int] = []
    try:
        while True:
            index = child.expect([r"(\d+) requests? waiting", "No more pending"])
            if index == 1:
                break
            counts.append(int(child.match.group(1)))
            child.expect(r"thread ([\w-]+) · call")
            seen.add(child.match.group(1))
            child.expect(MENU)
            assert "execute_sql" not in child.before or option[0] == "--search"
            child.send("s")  # skip: each request is seen once
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert seen == threads
    assert counts[0] == len(threads)


def test_someone_else_decided_first_is_named(tmp_path: Path) -> None:
    data = demo_dir(tmp_path / "demo")
    child = spawn(data, "--reviewer", "alice", "--thread", "cleanup-cancelled-orders")
    try:
        child.expect(MENU)
        other = build_agent(data)  # bob, elsewhere, rejects it first
        try:
            other.resume("cleanup-cancelled-orders",
                         [{"type": "reject", "message": "not this week"}], reviewer="bob")
        finally:
            other.close()
        child.send("a")
        child.expect(r"\[y\] yes, run it")
        child.send("y")
        child.expect(words("bob already rejected this call"))
        child.expect(words("(not this week); nothing was sent. Moving on."))
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    assert sample_rows(data, OLD_CANCELLED) != [(0,)]


def test_watch_waits_for_new_requests(tmp_path: Path) -> None:
    data = tmp_path / "demo"
    prepare(data)
    child = spawn(data, "--reviewer", "alice", "--watch", "--interval", "0.2")
    try:
        child.expect(words("Nothing to review"))
        child.expect(words("Waiting for new requests… (Ctrl+C to stop)"))
        agent = build_agent(data)
        try:
            thread_id, prompt = next(s for s in SCENARIOS if s[0] == "cleanup-cancelled-orders")
            assert agent.invoke(prompt, thread_id=thread_id).interrupted
        finally:
            agent.close()
        child.expect(r"thread cleanup-cancelled-orders · call")
        approve(child)
        child.expect(words("approved execute_sql"))
        child.expect(words("Waiting for new requests"))
        child.sendintr()
        child.expect(words("stopped watching"))
        child.expect(words("Session: 1 approved."))
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0


def test_a_question_is_shown_once(tmp_path: Path) -> None:
    data = demo_dir(tmp_path / "demo")
    agent = build_agent(data)
    try:
        [intr] = agent.get_thread("goodwill-credit").interrupts
        [action] = intr.value.action_requests
    finally:
        agent.close()
    question = next(v for v in action.args.values() if isinstance(v, str) and len(v) >= 8)
    assert action.description and question in action.description  # the description has it too
    child = spawn(data, "--reviewer", "alice", "--thread", "goodwill-credit")
    try:
        child.expect(MENU)
        panel = " ".join(child.before.split())
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert panel.count(" ".join(question.split())[:40]) == 1, panel
