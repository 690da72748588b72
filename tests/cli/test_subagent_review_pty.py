"""Sub-agents in the terminal (issue 18): `interlock review` in a real pseudo-terminal shows
a sub-agent's request on its parent thread with the path (parent call → child agent → tool),
and deciding it there runs the child's tool once; a question two levels down is answered the
same way. `interlock threads`, `show` and `audit --subagents` show the links."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pexpect
import pytest

from interlock import SqliteCheckpointer
from procs.subagent_team import Effects

from .helpers import child_env, cli_argv

TESTS = Path(__file__).resolve().parents[1]


def squash(text: str) -> str:
    """Screen text with rich's wrapping and panel borders folded into single spaces."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def _seed(db: Path, effects: Path) -> None:
    from server.subagent_agents import make_lead

    store = SqliteCheckpointer(db)
    lead = make_lead(store, Effects(effects))
    try:
        assert lead.invoke("clean up", thread_id="team-1").interrupted
        assert lead.invoke("paint the kitchen", thread_id="paint-1").interrupted
    finally:
        lead.close()


def _cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(cli_argv(*args), env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_review_shows_the_path_and_decides_on_the_parent(tmp_path: Path) -> None:
    db, effects = tmp_path / "team.db", tmp_path / "effects.log"
    _seed(db, effects)
    env = child_env(TERM="dumb", COLUMNS="120", LINES="50",
                    INTERLOCK_TEST_SUBAGENT_DB=str(db), INTERLOCK_TEST_EFFECTS=str(effects))
    env["PYTHONPATH"] = f"{TESTS}:{env['PYTHONPATH']}"
    url = f"sqlite:///{db}"

    # the list marks the sub-agents' threads; show prints the path on the parent's request
    listing = squash(_cli({**env, "COLUMNS": "100"}, "threads", "--db", url))
    assert "team-1@ask_dba (sub-agent of team-1)" in listing
    assert "waiting on delete_file (in researcher), drop_table (in dba)" in listing
    assert "2 thread(s) wait for a decision" in listing
    shown = squash(_cli(env, "show", "team-1", "--db", url))
    assert "path lead: researcher › researcher: delete_file" in shown
    assert "path lead: dba › dba: drop_table" in shown
    assert "raised in thread team-1@ask_dba by agent dba" in shown

    argv = cli_argv("review", "--agent", "server.subagent_agents:make_lead",
                    "--reviewer", "alice", "--role", "dba")
    child = pexpect.spawn(argv[0], argv[1:], env=env, encoding="utf-8", timeout=60,
                          dimensions=(50, 120))
    screens: list[str] = []
    handled: list[str] = []
    try:
        while True:
            index = child.expect([r"thread ([\w@.-]+) · (call \d+ of \d+|the run asks)",
                                  "No more pending"])
            screens.append(squash(child.before))  # the count of what waits, who reviews
            if index == 1:
                break
            thread_id = child.match.group(1)
            child.expect(r"\[q\] quit\s*\r?\n> ")
            panel = squash(child.before)
            screens.append(panel)
            if "delete_file" in panel:
                assert thread_id == "team-1"
                assert "path lead: researcher › researcher: delete_file" in panel
                assert ("raised in thread team-1@ask_researcher by agent researcher; decided "
                        "here, applied there") in panel
                assert "path notes.txt" in panel  # the child's argument
                assert "[m] approve & remember" in panel
                child.send("a")
                child.expect(r"\[y\] yes, run it")  # delete_file changes data: asked first
                child.send("y")
                child.expect("approved")
                handled.append("approve delete_file")
            elif "drop_table" in panel:
                assert thread_id == "team-1"
                assert "path lead: dba › dba: drop_table" in panel
                assert "reviewers with role: dba" in panel
                # the child's policy: no respond, no remembering
                assert "[p] respond" not in panel and "[m] approve" not in panel
                child.send("r")
                child.expect("Reason")
                child.sendline("not the users table")
                child.expect("rejected")
                handled.append("reject drop_table")
            elif "Which colour" in panel:
                assert thread_id == "paint-1"
                assert ("path lead: manager › manager: painter › painter: paint"
                        in panel), panel
                child.send("p")
                child.expect("Answer")
                child.sendline("green")
                child.expect("answered")
                handled.append("answer")
            else:
                pytest.fail(f"unexpected request on {thread_id}:\n{panel}")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, screens
    assert handled == ["approve delete_file", "reject drop_table", "answer"], screens
    # two requests of one thread and a question: three items, counted as such
    counts = [int(n) for n in re.findall(r"(\d+) requests? waiting", " ".join(screens))]
    assert counts == [3, 2, 1], counts

    lines = effects.read_text().splitlines()
    assert [line.split("|")[0] for line in lines] == ["delete_file", "paint"]
    assert lines[1].endswith("kitchen=green")
    shown = squash(_cli(env, "show", "team-1", "--db", url))
    assert "completed" in shown and "not the users table" in shown

    # the audit: the parent's routed decisions, the children's decisions given on it
    audit = squash(_cli(env, "audit", "--db", url, "--thread", "team-1", "--subagents"))
    assert "decision passed to sub-agent thread team-1@ask_researcher" in audit
    assert "decision passed to sub-agent thread team-1@ask_dba" in audit
    assert "approve delete_file (given on thread team-1)" in audit
    assert "reject drop_table: not the users table (given on thread team-1)" in audit
    assert "sub-agent thread of team-1 (call ask_dba, tool dba)" in audit
    only_parent = squash(_cli(env, "audit", "--db", url, "--thread", "team-1"))
    assert "given on thread team-1" not in only_parent
