"""Acceptance 3 of issue 18: a process deciding a sub-agent's request (on the parent thread)
is killed with SIGKILL at each step between the child's decision and the parent's
continuation; a fresh process then runs ``recover_stale()`` (what the server does at start and
periodically). Nothing runs twice, the decision is not lost, the sibling that had finished
does not run again, and the parent completes. Real processes, SQLite and Postgres."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conftest import StoreFactory
from interlock.messages import MESSAGE_ADAPTER
from procs.subagent_team import CHAIN_KILL_POINTS, KILL_POINTS
from transcript import assert_valid_transcript

WORKER = Path(__file__).parents[1] / "procs" / "subagent_worker.py"
THREAD = "crash-parent"
RESEARCHER = f"{THREAD}@ask_researcher"
DBA = f"{THREAD}@ask_dba"

pytestmark = [pytest.mark.slow,
              pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)]


def run(stores: StoreFactory, *args: str, expect_kill: bool = False,
        thread: str = THREAD) -> dict[str, Any]:
    cmd = [sys.executable, str(WORKER), "once", *args, "--db", stores.url(),
           "--effects", str(stores.tmp_path / "effects.log"), "--thread", thread]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=WORKER.parent)
    if expect_kill:
        assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stdout, proc.stderr)
        return {}
    assert proc.returncode == 0, proc.stderr[-4000:]
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


@pytest.mark.parametrize("point", KILL_POINTS)
def test_kill_between_child_decision_and_parent_continuation(
        stores: StoreFactory, point: str) -> None:
    started = run(stores, "start")["result"]
    assert started["status"] == "interrupted" and len(started["interrupts"]) == 2
    # the sibling finishes first: its tool ran once and must never run again
    after_dba = run(stores, "decide", "--tool", "drop_table")["result"]
    assert after_dba["status"] == "interrupted" and len(after_dba["interrupts"]) == 1

    run(stores, "decide", "--tool", "delete_file", "--kill-at", point, expect_kill=True)
    # where the kill landed between `running` and the stored result, the tool's outcome is
    # unknown: delete_file is not idempotent, so recovery asks; the answer says what is known
    # (not run yet: run it; ran: do not run it again)
    unknown_answer = {"type": "approve"} if point == "child_running" else {"type": "reject"}
    out = run(stores, "recover", "--unknown-decision", json.dumps(unknown_answer))
    state = out["state"]
    threads = state["threads"]

    asked = [i["value"]["action_requests"][0] for i in out["unknown"]]
    if point in ("child_running", "child_tool"):
        assert [(a["name"], a["reason"]) for a in asked] == [("delete_file", "outcome_unknown")]
        # shown on the parent, with the path to the child's call
        assert [s["thread_id"] for s in asked[0]["path"]] == [THREAD, RESEARCHER]
    else:
        assert asked == []

    # every thread finished; each side effect happened exactly once
    assert {tid: t["status"] for tid, t in threads.items()} == {
        THREAD: "completed", RESEARCHER: "completed", DBA: "completed"}, point
    assert Counter(line.split("|")[0] for line in state["effects"]) == {
        "delete_file": 1, "drop_table": 1}, (point, state["effects"])
    assert all(t["interrupts"] == [] for t in threads.values())
    # the parent's calls each have one result, in order; the final answer has both
    for t in threads.values():
        assert_valid_transcript([MESSAGE_ADAPTER.validate_python(m) for m in t["messages"]])
    final = threads[THREAD]["messages"][-1]["content"]
    assert final.startswith("summary: ") and "dropped users" in final
    if point == "child_tool":
        assert "researcher=researcher: " in final and "not" in final  # told not to run again
    else:
        assert "researcher=researcher: deleted notes.txt" in final
    # the parent ran each sub-agent call to its end once; the sibling started once
    parent = {e["tool_call_id"]: e for e in threads[THREAD]["journal"]}
    assert parent["ask_researcher"]["state"] == "succeeded"
    assert parent["ask_dba"]["state"] == "succeeded"
    assert threads[DBA]["audit"].count("tool_started") == 1
    assert threads[DBA]["audit"].count("decision") == 1
    # the researcher's decision was stored once and not lost
    assert threads[RESEARCHER]["audit"].count("decision") == (2 if asked else 1)
    assert threads[RESEARCHER]["audit"].count("subagent_started") == 1
    assert threads[THREAD]["audit"].count("run_started") == 1


@pytest.mark.parametrize("point", CHAIN_KILL_POINTS)
def test_kill_between_a_grandchild_answer_and_the_top(stores: StoreFactory, point: str) -> None:
    """boss -> manager -> painter; the painter's question is answered on the boss and the
    process is killed at each step up to the boss's continuation."""
    top = "crash-top"
    started = run(stores, "start", "--chain", thread=top)["result"]
    [question] = started["interrupts"]
    assert question["kind"] == "input" and len(question["path"]) == 3
    run(stores, "answer", "--chain", "--kill-at", point, expect_kill=True, thread=top)
    unknown_answer = {"type": "approve"} if point == "bottom_running" else {"type": "reject"}
    out = run(stores, "recover", "--chain", "--unknown-decision", json.dumps(unknown_answer),
              thread=top)
    threads = out["state"]["threads"]
    asked = [i["value"]["action_requests"][0] for i in out["unknown"]]
    if point in ("bottom_running", "bottom_tool"):
        assert [(a["name"], a["reason"]) for a in asked] == [("paint", "outcome_unknown")]
        assert [s["agent"] for s in asked[0]["path"]] == ["boss", "manager", "painter"]
    else:
        assert asked == []
    assert len(threads) == 3
    assert {t["status"] for t in threads.values()} == {"completed"}, (point, threads.keys())
    assert all(t["interrupts"] == [] for t in threads.values())
    effects = out["state"]["effects"]
    assert [line.split("|")[0] for line in effects] == ["paint"], (point, effects)
    assert effects[0].endswith("|kitchen=green")
    for t in threads.values():
        assert_valid_transcript([MESSAGE_ADAPTER.validate_python(m) for m in t["messages"]])
        assert t["audit"].count("input_answered") <= 1
    final = threads[top]["messages"][-1]["content"]
    if point == "bottom_tool":
        assert final.startswith("boss: manager: painter: ")
    else:
        assert final == "boss: manager: painter: painted the kitchen green"
    assert threads[top]["audit"].count("run_started") == 1


@pytest.mark.parametrize("point", ["child_tool", "child_succeeded"])
def test_cancel_after_a_kill_in_a_child_ends_every_thread_and_says_what_may_have_run(
        stores: StoreFactory, point: str) -> None:
    """Invariant 2: the process running the researcher's approved call is killed inside its
    tool (after the side effect), or right after the tool's result is stored (before the
    child's answer); then the parent is cancelled from another process, with no recovery
    first. Every thread ends idle (none left ``running`` for a sweep that cannot move it),
    the tool never runs again, and the parent's model is not told that the sub-agent "did
    not run": it had started, and what it did may have taken effect."""
    from interlock.storage.base import ROW_ONLY
    from procs.subagent_team import Effects, build_team

    run(stores, "start")
    run(stores, "decide", "--tool", "drop_table")  # the sibling finishes
    run(stores, "decide", "--tool", "delete_file", "--kill-at", point, expect_kill=True)
    effects = Effects(stores.tmp_path / "effects.log")
    assert effects.counts()["delete_file"] == 1
    orch, _, _ = build_team(stores(), effects)
    try:
        orch.cancel(THREAD, reason="stop")
        for tid in (THREAD, RESEARCHER, DBA):
            state = orch.get_thread(tid)
            assert state.status in ("idle", "completed") and not state.interrupts, (tid, state)
            row = asyncio.run(orch.checkpointer.load(tid, after_seq=ROW_ONLY))
            assert row is not None and not row.thread.lease_owner, (tid, row.thread)
        assert orch.get_thread(RESEARCHER).status == "idle"
        assert orch.recover_stale() == []
        (msg,) = [m for m in orch.get_thread(THREAD).messages
                  if getattr(m, "tool_call_id", None) == "ask_researcher"]
        assert "may have taken effect" in msg.content and "did not run" not in msg.content
        (row,) = [a for a in orch.audit(THREAD) if a.kind == "cancelled"]
        assert row.data["outcome_unknown"] == ["ask_researcher"]
        assert effects.counts() == {"delete_file": 1, "drop_table": 1}
    finally:
        orch.close()
