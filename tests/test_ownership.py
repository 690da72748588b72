"""Who owns a run, told truthfully: leases renewed while tools run, cancellation that waits for
a running tool and stores its real outcome, a server that drains and recovers by itself.

Real processes throughout (``tests/procs/slow_agent.py``: one synchronous tool that appends
``start`` / ``done`` to a file, so every test counts exactly how often it acted).
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from interlock import (
    Agent,
    CallState,
    HumanInTheLoop,
    InterruptConflict,
    MemoryCheckpointer,
    ScriptedModel,
    SqliteCheckpointer,
    StaleInterrupt,
    StorageError,
    ThreadBusy,
    tool,
)
from interlock.storage import ROW_ONLY
from store_faults import RunningWriteFails

PROCS = Path(__file__).parent / "procs"
pytestmark = pytest.mark.slow


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ, "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": os.pathsep.join([str(PROCS), os.environ.get("PYTHONPATH", "")]),
        "SLOW_DB": f"sqlite:///{tmp_path / 'threads.db'}",
        "SLOW_COUNTER": str(tmp_path / "counter.txt"),
        "SLOW_SECONDS": "2",
    }


def parent_agent(env: dict[str, str], **kw: Any) -> Agent:
    """This test process's own agent on the child's database (the same tool and model)."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        sys.path.insert(0, str(PROCS))
        # a fresh copy of the module: its tool writes to this test's counter file
        spec = importlib.util.spec_from_file_location(f"slow_agent_{uuid.uuid4().hex}",
                                                      PROCS / "slow_agent.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        made: Agent = module.agent
        return Agent(model=made.model, tools=made.tools, middleware=made.middleware,
                     checkpointer=SqliteCheckpointer(env["SLOW_DB"].removeprefix("sqlite:///")),
                     **kw)
    finally:
        sys.path.remove(str(PROCS))
        os.environ.clear()
        os.environ.update(saved)


def lease_until(agent: Agent, thread_id: str) -> datetime:
    snap = asyncio.run(agent.checkpointer.load(thread_id, after_seq=ROW_ONLY))
    assert snap is not None and snap.thread.lease_until is not None
    return snap.thread.lease_until


def counter(env: dict[str, str]) -> list[str]:
    path = Path(env["SLOW_COUNTER"])
    return path.read_text().splitlines() if path.exists() else []


def wait_for(what: str, check: Any, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


async def cancelled_once_started(run: Awaitable[Any], started: Callable[[], bool]) -> float:
    """Start ``run`` and cancel it, as a caller's timeout does, once ``started()`` holds (the
    tool was entered, however loaded the machine); the seconds from the cancellation until
    the run ended."""
    task = asyncio.ensure_future(run)
    for _ in range(800):
        if started():
            break
        await asyncio.sleep(0.025)
    assert started(), "the tool did not start within 20 s"
    cancelled = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return time.monotonic() - cancelled


def default_sigint() -> None:
    """In the child: Ctrl-C raises KeyboardInterrupt, as in a terminal, even when this test
    runs in a process that ignores SIGINT (a background job of a non-interactive shell does;
    the child would inherit that, and Python would then never raise KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def child(env: dict[str, str], action: str, thread_id: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(PROCS / "slow_run.py"), action, thread_id],
                            env=env, cwd=PROCS, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=default_sigint)


def unknown_requests(agent: Agent, thread_id: str) -> int:
    return sum(1 for r in agent.audit(thread_id) if r.kind == "outcome_unknown")


def assert_ran_once_and_succeeded(agent: Agent, env: dict[str, str], thread_id: str) -> None:
    assert counter(env) == ["start 1", "done 1"]
    [entry] = agent.journal(thread_id)
    assert entry.state == CallState.SUCCEEDED
    assert entry.result is not None and entry.result.content == "worked 1"
    assert unknown_requests(agent, thread_id) == 0


# ---------------------------------------------------------------------- leases


def test_a_tool_outliving_three_leases_is_never_taken_over(env: dict[str, str]) -> None:
    env = {**env, "SLOW_LEASE": "1", "SLOW_SECONDS": "3.5"}
    proc = child(env, "invoke", "t")
    try:
        wait_for("the tool to start", lambda: counter(env) == ["start 1"])
        other = parent_agent(env, lease=timedelta(seconds=1))
        refused_at: list[datetime] = []
        first_lease: datetime | None = None
        while proc.poll() is None and counter(env) == ["start 1"]:
            with pytest.raises(ThreadBusy) as busy:  # the owner is alive and renews its lease
                other.recover("t")
            assert not busy.value.here
            refused_at.append(datetime.now(UTC))
            if first_lease is None:
                first_lease = lease_until(other, "t")
            time.sleep(0.2)
        out, err = proc.communicate(timeout=30)
        assert out.strip() == "completed", err
        # still refused once the lease the first refusal saw had run out: the owner renewed
        # it (tried for the tool's whole 3.5 s, however slowly each try goes on this machine)
        assert first_lease is not None and refused_at[-1] > first_lease, (first_lease,
                                                                          refused_at)
        assert_ran_once_and_succeeded(other, env, "t")
        assert other.get_thread("t").status == "completed"
    finally:
        proc.kill()


def test_the_lease_is_renewed_while_a_tool_runs_and_never_after(tmp_path: Path) -> None:
    """Renewals every third of the lease while the tool runs (each one stores the thread row
    again with a later ``lease_until``), and none once the call is over."""
    store = MemoryCheckpointer()
    seen: list[tuple[int, Any]] = []

    @tool
    async def slow(seconds: float) -> str:
        """Wait ``seconds`` seconds."""
        t_end = time.monotonic() + seconds
        while time.monotonic() < t_end:
            snap = await store.load("t")
            assert snap is not None
            seen.append((snap.thread.version, snap.thread.lease_until))
            await asyncio.sleep(0.03)
        return "done"

    agent = Agent(model=ScriptedModel([{"name": "slow", "args": {"seconds": 0.75}}, "ok"]),
                  tools=[slow], checkpointer=store, lease=timedelta(seconds=0.3))

    async def go() -> tuple[int, int, list[str]]:
        result = await agent.ainvoke("go", thread_id="t")
        assert result.output == "ok"
        after = (await agent.aget_thread("t")).version
        await asyncio.sleep(0.5)  # five renewal periods: nothing may be stored any more
        later = (await agent.aget_thread("t")).version
        lease_tasks = [t.get_name() for t in asyncio.all_tasks()
                       if t.get_name().startswith("interlock-lease:")]
        return after, later, lease_tasks

    after, later, lease_tasks = asyncio.run(go())
    versions = sorted({v for v, _ in seen})
    leases = [u for _, u in sorted(set(seen), key=lambda x: x[0])]
    assert len(versions) >= 4  # about 0.75 s / 0.1 s renewals, at least a few stored
    assert all(a < b for a, b in itertools.pairwise(leases))  # each one later
    assert later == after and lease_tasks == []
    assert agent.get_thread("t").status == "completed"


# ---------------------------------------------------------------------- cancellation


def test_wait_for_timeout_waits_for_the_sync_tool_and_stores_its_outcome(
    env: dict[str, str],
) -> None:
    agent = parent_agent(env)

    waited = asyncio.run(cancelled_once_started(agent.ainvoke("go", thread_id="t"),
                                                lambda: counter(env) == ["start 1"]))
    assert waited >= 1.5  # returned once the 2 s tool had ended
    assert_ran_once_and_succeeded(agent, env, "t")
    state = agent.get_thread("t")
    assert state.status == "failed" and state.error is not None  # the run was cancelled
    result = agent.recover("t")
    assert result.status == "completed" and result.output == "finished: worked 1"
    assert_ran_once_and_succeeded(agent, env, "t")


def test_ctrl_c_on_a_blocking_resume_waits_for_the_sync_tool(env: dict[str, str]) -> None:
    env = {**env, "SLOW_GATED": "1"}
    agent = parent_agent(env)
    assert agent.invoke("go", thread_id="t").interrupted
    proc = child(env, "approve", "t")
    try:
        wait_for("the tool to start", lambda: counter(env) == ["start 1"])
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert out.strip() == "KeyboardInterrupt", err
        assert_ran_once_and_succeeded(agent, env, "t")
        assert agent.recover("t").status == "completed"
        assert_ran_once_and_succeeded(agent, env, "t")
    finally:
        proc.kill()


# ---------------------------------------------------------------------- the server


class Served:
    """``interlock serve slow_agent:agent`` in a child process."""

    def __init__(self, env: dict[str, str], *extra: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "interlock.cli", "serve", "slow_agent:agent", "--port", "0",
             "--log-level", "warning", *extra],
            env=env, cwd=PROCS, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 30
        self.url = ""
        while not self.url:
            line = self.proc.stderr.readline()
            if not line or time.monotonic() > deadline:
                raise AssertionError(f"the server did not start: {line}")
            found = re.search(r"review inbox at (http://\S+/)", line)
            if found:
                self.url = found.group(1)
        # keep reading: a server whose log fills an unread pipe blocks
        self.log: list[str] = []
        threading.Thread(target=lambda: self.log.extend(self.proc.stderr or ()),
                         daemon=True).start()

    def post(self, path: str, body: dict[str, Any]) -> int:
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return int(resp.status)

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=30) as resp:
            return json.load(resp)

    def stop(self, sig: int) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=60)


@pytest.fixture
def served(env: dict[str, str]) -> Iterator[list[Served]]:
    running: list[Served] = []
    yield running
    for s in running:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


@pytest.mark.parametrize("seconds", ["2", "6.5"], ids=["within-grace", "past-grace"])
def test_ctrl_c_on_serve_drains_the_running_tool(env: dict[str, str], served: list[Served],
                                                 seconds: str) -> None:
    """A 2 s tool ends within the server's shutdown grace (5 s); a 6.5 s tool outlives it,
    so its run is cancelled while the tool runs and must wait for it."""
    env = {**env, "SLOW_SECONDS": seconds}
    server = Served(env)
    served.append(server)
    assert server.post("api/threads", {"message": "go", "thread_id": "t"}) == 202
    wait_for("the tool to start", lambda: counter(env) == ["start 1"])
    server.stop(signal.SIGINT)
    agent = parent_agent(env)
    assert_ran_once_and_succeeded(agent, env, "t")
    if seconds == "6.5":  # cancelled after the grace, once the tool's result was stored
        state = agent.get_thread("t")
        assert state.status == "failed" and "Cancelled" in (state.error or "")
    # the shutdown let the run finish (or stored it as cancelled after the tool's result)
    assert agent.recover("t").status == "completed"
    assert_ran_once_and_succeeded(agent, env, "t")


def test_a_server_killed_during_a_tool_recovers_by_itself_on_restart(
    env: dict[str, str], served: list[Served],
) -> None:
    server = Served(env)
    served.append(server)
    assert server.post("api/threads", {"message": "go", "thread_id": "t"}) == 202
    wait_for("the tool to start", lambda: counter(env) == ["start 1"])
    server.stop(signal.SIGKILL)
    assert counter(env) == ["start 1"]  # died mid-call: its outcome is unknown

    again = Served(env)  # no `recover` call anywhere: the server does it at start
    served.append(again)

    def asks() -> bool:
        detail = again.get("api/threads/t")
        return detail["status"] == "interrupted" and bool(detail["interrupts"])

    wait_for("the outcome-unknown request", asks)
    [pending] = again.get("api/threads/t")["interrupts"]
    assert [a["reason"] for a in pending["value"]["action_requests"]] == ["outcome_unknown"]
    assert counter(env) == ["start 1"]  # not run again without a person deciding
    assert again.post("api/threads/t/decisions?wait=true",
                      {"decisions": [{"type": "approve"}]}) == 200
    assert counter(env) == ["start 1", "start 1", "done 1"]
    assert again.get("api/threads/t")["status"] == "completed"


# ---------------------------------------------------------------------- re-sent resumes


def test_a_resume_sent_again_after_a_crash_recovers_and_answers_consistently(
    env: dict[str, str],
) -> None:
    env = {**env, "SLOW_GATED": "1"}
    agent = parent_agent(env)
    first = agent.invoke("go", thread_id="t")
    interrupt_id = first.interrupts[0].id
    proc = child(env, "approve", "t")
    wait_for("the tool to start", lambda: counter(env) == ["start 1"])
    proc.kill()
    proc.wait()
    # the same resume again (a client retrying after no answer): it was stored before the
    # crash, so this one lost; the thread is recovered on the way and asks about the call
    with pytest.raises(InterruptConflict):
        agent.resume("t", [{"type": "approve"}], interrupt_id=interrupt_id)
    state = agent.get_thread("t")
    assert state.status == "interrupted"
    [request] = state.interrupts
    assert request.id != interrupt_id
    assert request.value.action_requests[0].reason == "outcome_unknown"
    # and once more: still the same answer, nothing else changes
    with pytest.raises(InterruptConflict):
        agent.resume("t", [{"type": "approve"}], interrupt_id=interrupt_id)
    # a resume without the id is told that the pending request is a new one
    with pytest.raises(StaleInterrupt):
        agent.resume("t", [{"type": "reject"}], interrupt_id="stale")
    assert counter(env) == ["start 1"]
    assert agent.get_thread("t").interrupts == state.interrupts


def test_a_resume_without_an_id_after_a_crash_is_told_what_is_missing(
    env: dict[str, str],
) -> None:
    """The thread's process died mid-tool; a resume that names no interrupt is answered by
    recovery's new request: the refusal says the id is missing and which one is pending (it
    said "Interrupt '' is not pending")."""
    env = {**env, "SLOW_GATED": "1"}
    agent = parent_agent(env)
    agent.invoke("go", thread_id="t")
    proc = child(env, "approve", "t")
    wait_for("the tool to start", lambda: counter(env) == ["start 1"])
    proc.kill()
    proc.wait()
    with pytest.raises(StaleInterrupt) as err:
        agent.resume("t", [{"type": "reject"}])
    [request] = agent.get_thread("t").interrupts
    message = str(err.value)
    assert "Interrupt ''" not in message
    assert "names no interrupt_id" in message and "interrupt_id=..." in message
    assert request.id in message
    assert counter(env) == ["start 1"]


# ---------------------------------------------------------------------- same process


def test_an_async_tool_cancelled_by_wait_for_is_cancelled_at_once(tmp_path: Path) -> None:
    reached: list[str] = []

    @tool
    async def slow() -> str:
        """Takes long."""
        reached.append("started")
        await asyncio.sleep(30)
        return "finished"

    agent = Agent(model=ScriptedModel([{"name": "slow", "args": {}, "id": "s1"}, "done"]),
                  tools=[slow], middleware=[HumanInTheLoop({})],
                  checkpointer=SqliteCheckpointer(tmp_path / "t.db"))

    waited = asyncio.run(cancelled_once_started(agent.ainvoke("go", thread_id="t"),
                                                lambda: reached == ["started"]))
    assert waited < 5  # an async tool is cancellable: no waiting for it
    assert reached == ["started"]
    assert agent.get_thread("t").status == "failed"


def test_interlock_recover_continues_the_threads_of_a_dead_process(env: dict[str, str]) -> None:
    proc = child(env, "invoke", "t")
    wait_for("the tool to start", lambda: counter(env) == ["start 1"])
    proc.kill()
    proc.wait()
    quiet = child(env, "invoke", "other")  # a thread whose run ends normally
    assert quiet.communicate(timeout=30)[0].strip() == "completed"

    def recover(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "interlock.cli", "recover", *args, "--agent",
             "slow_agent:agent"], env=env, cwd=PROCS, capture_output=True, text=True,
            timeout=60)

    done = recover("--json")
    assert done.returncode == 0, done.stderr
    [outcome] = json.loads(done.stdout)  # only the thread of the dead process
    assert outcome["thread_id"] == "t" and outcome["status"] == "interrupted"
    reasons = [a["reason"] for a in outcome["interrupts"][0]["value"]["action_requests"]]
    assert reasons == ["outcome_unknown"]
    assert counter(env) == ["start 1", "start 1", "done 1"]  # "other" ran; "t" did not again
    again = recover()
    assert again.returncode == 0 and "No thread needed recovery." in again.stdout


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")
def test_a_dead_process_not_reaped_yet_is_taken_for_dead(env: dict[str, str]) -> None:
    """Invariant 2: a run whose process was killed has a mover at once, also while its
    parent has not reaped it (a zombie still answers ``kill(pid, 0)``; a container whose
    first process reaps nothing keeps it so): its thread is recovered now, not once its
    five-minute lease runs out."""
    proc = child(env, "invoke", "t")
    wait_for("the tool to start", lambda: counter(env) == ["start 1"])
    os.kill(proc.pid, signal.SIGKILL)
    stat = Path(f"/proc/{proc.pid}/stat")
    wait_for("the child to be a zombie", lambda: stat.read_bytes().rsplit(b")", 1)[1][1:2]
             == b"Z")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "interlock.cli", "recover", "--json", "--agent",
             "slow_agent:agent"], env=env, cwd=PROCS, capture_output=True, text=True,
            timeout=60)
        assert done.returncode == 0, done.stderr
        [outcome] = json.loads(done.stdout)
        assert outcome["thread_id"] == "t" and outcome["status"] == "interrupted"
        reasons = [a["reason"] for a in outcome["interrupts"][0]["value"]["action_requests"]]
        assert reasons == ["outcome_unknown"]
        assert counter(env) == ["start 1"]  # not run again
    finally:
        proc.wait()


def test_a_sync_tool_outliving_tool_grace_keeps_the_thread_until_its_result_is_stored(
    env: dict[str, str],
) -> None:
    agent = parent_agent(env, tool_grace=timedelta(seconds=0.3))

    async def go() -> tuple[float, str]:
        waited = await cancelled_once_started(agent.ainvoke("go", thread_id="t"),
                                              lambda: counter(env) == ["start 1"])
        # the run gave up waiting, but the tool still runs: the thread stays owned here
        with pytest.raises(ThreadBusy) as busy:
            await agent.arecover("t")
        assert busy.value.here
        for _ in range(200):  # the tool ends, and its result is stored right after
            if counter(env) == ["start 1", "done 1"]:
                break
            await asyncio.sleep(0.05)
        for _ in range(100):
            if (await agent.aget_thread("t")).status == "failed":
                break
            await asyncio.sleep(0.05)
        return waited, (await agent.aget_thread("t")).status

    waited, status = asyncio.run(go())
    assert waited < 1.5  # bounded by tool_grace, not by the 2 s tool
    assert status == "failed"
    assert_ran_once_and_succeeded(agent, env, "t")
    assert agent.recover("t").status == "completed"
    assert_ran_once_and_succeeded(agent, env, "t")


def test_a_write_that_failed_here_says_nothing_of_the_same_attempt_run_by_another_process(
    env: dict[str, str],
) -> None:
    """This process's ``running`` write of attempt 1 failed and did not land: it knows that
    its own attempt never started. Another process then stored attempt 1 of the same call,
    started the tool and was killed mid-tool. Recovering here must not take that attempt
    for its own: the outcome is unknown and put to a person; the tool is not run again."""
    env = {**env, "SLOW_GATED": "1", "SLOW_SECONDS": "30"}
    here = parent_agent(env)
    store = here.checkpointer
    here.checkpointer = RunningWriteFails(store, lands=False)
    assert here.invoke("go", thread_id="t").interrupted
    with pytest.raises(StorageError, match="injected"):
        here.resume("t", [{"type": "approve"}])
    assert counter(env) == []
    here.checkpointer = store
    state = here.get_thread("t")
    action = "approve" if state.interrupts else "recover"  # was the decision stored first?
    other = child(env, action, "t")
    try:
        wait_for("the other process's tool to start", lambda: counter(env) == ["start 1"])
        [entry] = here.journal("t")
        assert entry.state == CallState.RUNNING and entry.attempts == 1
    finally:
        other.kill()
        other.wait(10)
    result = here.recover("t")
    assert counter(env) == ["start 1"]  # not started a second time
    assert result.status == "interrupted", result
    [request] = result.interrupts[0].value.action_requests
    assert request.reason == "outcome_unknown"
