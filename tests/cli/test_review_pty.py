"""`interlock review` in a real pseudo-terminal: single keys, $EDITOR, prompts.

The reviewer approves the DELETE, edits the apology e-mail (first saving text that is not
JSON, then arguments the tool's schema refuses, then a valid edit), answers the agent's
question, rejects the UPDATE that follows with a reason, and approves-and-remembers the ops
e-mail so the finance e-mail goes out without asking. The sample database and the audit log
must show exactly that.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pexpect
import pytest

from interlock import CallState
from interlock.demo import build_agent

from .helpers import child_env, cli_argv, demo_dir, sample_rows

EDITOR = textwrap.dedent("""
    import json, pathlib, sys
    log = pathlib.Path(sys.argv[1])  # EDITOR="python editor.py LOG"; the file comes last
    path = pathlib.Path(sys.argv[2])
    seen = path.read_text()
    calls = json.loads(log.read_text()) if log.exists() else []
    calls.append(seen)
    log.write_text(json.dumps(calls))
    # the body is plain text in its own section: change one line, add one, keep the rest
    edited = (calls[0].replace("Your order #1042 is delayed", "Sorry about order #1042")
                  .replace("Dear Noah,", "Hello Noah,")
                  .replace("Kind regards,", "We will refund the shipping.\\nKind regards,"))
    if len(calls) == 1:
        path.write_text("this line is outside any section\\n" + seen)
    elif len(calls) == 2:
        path.write_text(edited + "== cc (text) ==\\nboss@example.com\\n")
    else:
        path.write_text(edited)
""")


def words(text: str) -> str:
    """A pattern for ``text`` that allows rich's line wrapping between the words."""
    return r"\s+".join(re.escape(w) for w in text.split())


def test_terminal_review_session(tmp_path: Path) -> None:
    data = demo_dir(tmp_path / "demo")
    editor = tmp_path / "editor.py"
    editor.write_text(EDITOR)
    editor_log = tmp_path / "editor-calls.json"
    env = child_env(INTERLOCK_DEMO_DIR=str(data), TERM="dumb", COLUMNS="120", LINES="50",
                    EDITOR=f"{sys.executable} {editor} {editor_log}")
    argv = cli_argv("review", "--agent", "interlock.demo:agent", "--reviewer", "alice")
    child = pexpect.spawn(argv[0], argv[1:], env=env, encoding="utf-8", timeout=60,
                          dimensions=(50, 120))
    transcript: list[str] = []
    handled: list[str] = []
    try:
        while True:
            index = child.expect([r"thread ([\w-]+) · call \d+ of \d+", "No more pending"])
            transcript.append(child.before + child.after)
            if index == 1:
                break
            thread_id = child.match.group(1)
            child.expect(r"\[q\] quit\s*\r?\n> ")
            panel = child.before
            transcript.append(panel)
            if thread_id == "cleanup-cancelled-orders":
                assert "DELETE FROM orders" in panel
                assert "allowed: approve, reject" in panel
                assert "[e] edit" not in panel and "[p] respond" not in panel
                child.send("a")
                # a tool not declared read-only asks first, as in the web inbox
                child.expect(words("Approve execute_sql? It runs at once."))
                child.expect(r"\[y\] yes, run it\s+\[n\] no")
                child.send("y")
                handled.append("approve")
            elif thread_id == "late-order-1042":
                assert "noah.weber@example.com" in panel and "[e] edit" in panel
                child.send("e")
                child.expect(words("cannot read the edit: line 1 is outside any argument section"))
                child.expect(words("do not match the schema of tool 'send_email'"))
                child.expect(words("Extra inputs are not permitted"))
                # the difference, before anything is sent
                child.expect(r"\[y\] send this edit\s+\[e\] edit again\s+\[n\] discard the edit")
                diff = child.before
                transcript.append(diff)
                assert "your edit of send_email" in diff
                assert "- Dear Noah," in diff and "+ Hello Noah," in diff
                assert "+ We will refund the shipping." in diff
                assert "- Your order #1042 is delayed" in diff
                assert "+ Sorry about order #1042" in diff
                assert "unchanged: to" in diff
                assert "\\n" not in diff  # text, not JSON escapes
                child.send("y")
                child.expect(words("edited send_email"))
                handled.append("edit")
            elif thread_id == "goodwill-credit" and "ask_user" in panel:
                assert "[p] respond" in panel and "[a] approve" not in panel
                child.send("p")
                child.expect("Answer")
                child.sendline("25")
                handled.append("respond")
            elif thread_id == "goodwill-credit":
                assert "UPDATE customers SET credit_cents = credit_cents + 2500" in panel
                child.send("r")
                child.expect("Reason")
                child.sendline("needs manager sign-off")
                child.expect(words("rejected execute_sql"))
                handled.append("reject")
            elif thread_id == "weekly-report":
                assert "ops@example.com" in panel
                child.send("m")
                child.expect(words("Approve every later send_email call in this thread?"))
                child.expect(r"\[y\] yes, approve and remember\s+\[n\] no")
                child.send("y")
                child.expect(words("approved & remembered send_email"))
                handled.append("remember")
            else:
                pytest.fail(f"unexpected request for {thread_id}:\n{panel}")
        child.expect(pexpect.EOF)
        transcript.append(child.before)
    finally:
        child.close()
    output = "".join(transcript)
    assert child.exitstatus == 0, output
    assert sorted(handled) == ["approve", "edit", "reject", "remember", "respond"], output
    assert ("Session: 1 approved, 1 edited, 1 responded, 1 rejected, 1 approved & remembered."
            in " ".join(output.split())), output

    # the editor: one section per argument, the body as plain text with its line breaks;
    # reopened with the error each time
    calls = json.loads(editor_log.read_text())
    assert len(calls) == 3
    assert "== to (text) ==\nnoah.weber@example.com\n== subject (text) ==" in calls[0]
    assert "== body (text) ==\nDear Noah,\n\nyour order #1042" in calls[0]
    assert "\\n" not in calls[0] and "// error" not in calls[0]
    assert "// error: line 1 is outside any argument section" in calls[1]
    assert "// error:" in calls[2] and "Extra inputs are not permitted" in calls[2]
    # who decides, and how many requests wait, are on screen
    assert "interlock review · reviewing as alice (roles: none)" in " ".join(output.split())
    counts = [int(n) for n in re.findall(r"(\d+) requests? waiting", output)]
    assert counts[0] == 4 and counts == sorted(counts, reverse=True), counts

    # the sample database
    assert sample_rows(data, "SELECT COUNT(*) FROM orders WHERE status = 'cancelled' AND "
                             "created_at < '2024-01-01'") == [(0,)]
    assert sample_rows(data, "SELECT credit_cents FROM customers WHERE id = 17") == [(500,)]
    assert sorted(sample_rows(data, "SELECT to_addr, subject FROM outbox")) == [
        ("finance@example.com", "Weekly revenue figures"),
        ("noah.weber@example.com", "Sorry about order #1042"),
        ("ops@example.com", "Weekly order summary"),
    ]

    # journal and audit
    agent = build_agent(data)
    try:
        for thread_id in ("cleanup-cancelled-orders", "late-order-1042", "goodwill-credit",
                          "weekly-report"):
            assert agent.get_thread(thread_id).status == "completed", thread_id
        [email] = [e for e in agent.journal("late-order-1042") if e.name == "send_email"]
        assert email.state == CallState.SUCCEEDED
        assert email.decided_by == "alice"
        assert email.exec_args is not None
        assert email.exec_args["subject"] == "Sorry about order #1042"
        assert email.exec_args["body"].startswith("Hello Noah,\n\nyour order #1042")
        assert "We will refund the shipping.\nKind regards," in email.exec_args["body"]
        assert email.args["subject"] == "Your order #1042 is delayed"  # the model's call kept

        decisions = {(r.thread_id, r.data["type"]): r for r in agent.audit()
                     if r.kind == "decision"}
        assert sorted(decisions) == [
            ("cleanup-cancelled-orders", "approve"),
            ("goodwill-credit", "reject"),
            ("goodwill-credit", "respond"),
            ("late-order-1042", "edit"),
            ("weekly-report", "approve"),
        ]
        assert {r.actor for r in decisions.values()} == {"alice"}
        edit = decisions[("late-order-1042", "edit")]
        assert edit.data["edited_action"]["args"]["subject"] == "Sorry about order #1042"
        assert decisions[("goodwill-credit", "reject")].data["message"] == \
            "needs manager sign-off"
        assert decisions[("goodwill-credit", "respond")].data["message"] == "25"
        assert decisions[("weekly-report", "approve")].data["remember"] == "thread"
        rules = [r for r in agent.audit("weekly-report") if r.kind == "rule_created"]
        assert [(r.actor, r.data["tool_name"]) for r in rules] == [("alice", "send_email")]
        auto = [r for r in agent.audit("weekly-report") if r.kind == "auto_approved"]
        assert [(r.actor, r.data["args"]["to"]) for r in auto] == [
            ("rule:remember:thread:send_email", "finance@example.com")]
        # the rejected and the invalid edits changed nothing else; the chain is intact
        assert agent.verify_audit() == []
    finally:
        agent.close()
