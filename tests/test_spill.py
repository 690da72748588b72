"""A result that could not be stored outlives its process (issue 31, finding 2): next to a
SQLite database it is written to ``<database>.unstored``, and whoever recovers the thread
after the process died stores it instead of asking "outcome unknown".

A real child process runs the approved tool; the tool takes SQLite's write lock on another
connection (as another process holding a long write would), so the result cannot be stored;
the child then dies (``os._exit``) and the lock goes with it. This process recovers the
thread: the tool ran once, its result is the one stored, nobody is asked."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from interlock import Agent, Checkpointer, HumanInTheLoop, ScriptedModel, SqliteCheckpointer, tool
from store_faults import RunningWriteFails

TESTS = Path(__file__).parent


def make_agent(db: str, ran_file: str) -> Agent:
    holder: list[sqlite3.Connection] = []

    @tool
    def charge(amount: int) -> str:
        """Charge an amount."""
        with open(ran_file, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
        if os.environ.get("SPILL_TEST_LOCK"):
            conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
            conn.execute("BEGIN IMMEDIATE")  # held until this process dies
            holder.append(conn)
        return f"charged {amount}"

    return charging(charge, db)


def charging(charge: Any, db: str | Path | Checkpointer) -> Agent:
    """An agent whose model asks for ``charge(amount=7)`` (call ``c1``) and answers with the
    result, the call under review; on the SQLite file ``db``, or on the store ``db``."""
    def reply(messages: Any) -> Any:
        if messages[-1].role == "tool":
            return f"done: {messages[-1].content}"
        return {"name": "charge", "args": {"amount": 7}, "id": "c1"}

    return Agent(model=ScriptedModel(reply), tools=[charge],
                 middleware=[HumanInTheLoop({"charge": True})],
                 checkpointer=db if not isinstance(db, str | Path)
                 else SqliteCheckpointer(db, busy_timeout=0.2))


CHILD = """
import os, sys
from test_spill import make_agent
from interlock import StorageError
agent = make_agent(sys.argv[1], sys.argv[2])
try:
    agent.resume("t", [{"type": "approve"}])
except StorageError as exc:
    print("refused:", exc, flush=True)
os._exit(0)
"""


def test_a_result_spilled_by_a_dead_process_is_stored_by_recovery(tmp_path: Path) -> None:
    db, ran = str(tmp_path / "t.db"), tmp_path / "ran.txt"
    ran.touch()
    agent = make_agent(db, str(ran))
    assert agent.invoke("charge", thread_id="t").interrupted
    child = subprocess.run(
        [sys.executable, "-c", CHILD, db, str(ran)], capture_output=True, text=True,
        timeout=120, env={**os.environ, "SPILL_TEST_LOCK": "1",
                          "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get(
                              "PYTHONPATH", "")])})
    assert "refused:" in child.stdout and "locked" in child.stdout, child.stdout + child.stderr
    assert len(ran.read_text().split()) == 1
    assert list(Path(db + ".unstored").glob("*.json")), "the result was spilled"
    [result] = agent.recover_stale()
    assert result.status == "completed" and result.output == "done: charged 7"
    assert len(ran.read_text().split()) == 1  # not run again
    kinds = [r.kind for r in agent.audit("t")]
    assert "outcome_unknown" not in kinds
    assert list(Path(db + ".unstored").glob("*.json")) == []  # stored: the file is gone


def test_a_result_kept_for_one_database_is_never_another_databases(
        tmp_path: Path, monkeypatch: Any) -> None:
    """Two databases used by one process hold a thread and a call of the same ids. The result
    kept for database A (its store refused it) is not taken as the result of B's call: B's
    call, whose run was cancelled while its async tool awaited, is asked about ("outcome
    unknown"), not recorded as succeeded with A's result (before: the result kept in this
    process was looked up by thread, call and attempt alone)."""

    from interlock import StorageError

    ran = tmp_path / "ran"
    a = make_agent(str(tmp_path / "a.db"), str(ran))
    assert a.invoke("charge", thread_id="t").interrupted
    monkeypatch.setenv("SPILL_TEST_LOCK", "1")  # the tool takes A's write lock and keeps it
    with pytest.raises(StorageError):
        a.resume("t", [{"type": "approve"}])
    monkeypatch.delenv("SPILL_TEST_LOCK")
    assert len(ran.read_text().splitlines()) == 1  # A's result: "charged 7", kept

    b, result = cancelled_mid_tool_then_recovered(tmp_path / "b.db", [])
    assert result.status == "interrupted", result
    [request] = result.interrupts[0].value.action_requests
    assert request.reason == "outcome_unknown"
    assert not any("charged 7" in str(m.content) for m in b.get_thread("t").messages)


def test_a_write_that_failed_for_one_database_says_nothing_of_another(tmp_path: Path) -> None:
    """Database A's ``running`` write of call ``c1`` of thread ``t`` failed here (yet
    landed): this process knows that attempt never started — in A. In database B, the call
    of the same ids started (an async tool, cancelled at its await): recovering B asks
    "outcome unknown" instead of running the tool a second time."""

    from interlock import StorageError

    ran: list[str] = []

    @tool(name="charge")
    def charge_a(amount: int) -> str:
        """Charge an amount."""
        ran.append("a")
        return f"charged {amount}"

    a = charging(charge_a, tmp_path / "a.db")
    a.checkpointer = RunningWriteFails(a.checkpointer, lands=True)
    assert a.invoke("charge", thread_id="t").interrupted
    with pytest.raises(StorageError, match="injected"):
        a.resume("t", [{"type": "approve"}])
    assert ran == []

    _, result = cancelled_mid_tool_then_recovered(tmp_path / "b.db", ran)
    assert ran == ["b"], ran  # B's tool started once and was not run again
    assert result.status == "interrupted", result


def cancelled_mid_tool_then_recovered(db: Path, ran: list[str]) -> tuple[Agent, Any]:
    """Database ``db``: call ``c1`` of thread ``t`` approved; its async tool (which appends
    "b" to ``ran``) is cancelled at its first await with its run, then the thread is
    recovered. The agent and the recovery's result."""
    import asyncio

    started = asyncio.Event()

    @tool
    async def charge(amount: int) -> str:
        """Charge an amount."""
        ran.append("b")
        if not started.is_set():  # the first call waits until its run is cancelled
            started.set()
            await asyncio.sleep(60)
        return f"charged {amount} in B"

    b = charging(charge, db)

    async def cancelled_mid_tool() -> Any:
        assert (await b.ainvoke("charge", thread_id="t")).interrupted
        run = asyncio.ensure_future(b.aresume("t", [{"type": "approve"}]))
        await started.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        return await b.arecover("t")

    return b, asyncio.run(cancelled_mid_tool())


TAKEN_OVER_CHILD = """
import asyncio, os, sys, time
from datetime import timedelta
from test_spill import charging
from interlock import tool

ran, go = sys.argv[2], sys.argv[3]

@tool
async def charge(amount: int) -> str:
    '''Charge an amount.'''
    with open(ran, "a", encoding="utf-8") as f:
        f.write(f"{os.getpid()}\\n")
    while not os.path.exists(go):  # blocks the event loop: the lease is not renewed
        time.sleep(0.05)
    return f"charged {amount}"

agent = charging(charge, sys.argv[1])
agent.lease = timedelta(seconds=0.5)
try:
    agent.resume("t", [{"type": "approve"}])
except Exception as exc:
    print("refused:", type(exc).__name__, flush=True)
os._exit(0)
"""


@pytest.mark.slow
@pytest.mark.parametrize("then", ["decision", "sweep", "cancel"])
def test_a_result_spilled_after_a_takeover_withdraws_the_unknown_question(
        tmp_path: Path, then: str) -> None:
    """A process runs an approved call whose tool outlives the lease; another process takes
    the thread over and asks "outcome unknown"; then the tool returns, the first process
    cannot store the result (the thread is no longer its own), spills it next to the
    database and ends. The result is known: the sweep stores it and withdraws the question, a
    reviewer's decision on the question is refused instead of overruling it (before: "run
    it again" ran the tool a second time, and the sweep left the question pending for good),
    and a cancel closes the call with its real result, not as "outcome unknown"."""
    import time

    from interlock import StaleInterrupt

    db, ran, go = str(tmp_path / "t.db"), tmp_path / "ran.txt", tmp_path / "go"
    ran.touch()
    agent = make_agent(db, str(ran))
    assert agent.invoke("charge", thread_id="t").interrupted
    child = subprocess.Popen(
        [sys.executable, "-c", TAKEN_OVER_CHILD, db, str(ran), str(go)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get(
            "PYTHONPATH", "")])})
    try:
        deadline = time.monotonic() + 60
        while not agent.recover_stale():  # taken over once the child's lease ran out
            assert time.monotonic() < deadline, "the thread was never taken over"
            time.sleep(0.2)
        [request] = agent.get_thread("t").interrupts
        assert request.value.action_requests[0].reason == "outcome_unknown"
        go.touch()
        out, _ = child.communicate(timeout=60)
    finally:
        go.touch()
        if child.poll() is None:
            child.kill()
    assert "refused:" in out, out
    assert len(ran.read_text().split()) == 1
    assert list(Path(db + ".unstored").glob("*.json")), "the result was spilled"

    if then == "decision":
        with pytest.raises(StaleInterrupt):
            agent.resume("t", [{"type": "approve"}], interrupt_id=request.id)
    elif then == "sweep":
        agent.recover_stale()
    else:
        agent.cancel("t")
    state = agent.get_thread("t")
    [entry] = agent.journal("t")
    assert len(ran.read_text().split()) == 1  # not run again
    assert entry.state.value == "succeeded" and entry.result is not None
    assert entry.result.content == "charged 7"
    assert state.interrupts == []
    assert state.status == ("idle" if then == "cancel" else "completed")
    if then != "cancel":
        assert state.messages[-1].content == "done: charged 7"
    late = [r for r in agent.audit("t") if r.kind == "recovered" and r.tool_call_id == "c1"]
    assert [r.data.get("result_stored_late") for r in late] == [True]
    assert list(Path(db + ".unstored").glob("*.json")) == []
    assert agent.verify_audit("t").ok
    agent.close()
