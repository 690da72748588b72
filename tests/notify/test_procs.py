"""Real processes: a server killed with SIGKILL between the commit of a request and the
delivery of its webhook, and two processes giving the final approval of a four-eyes request at
the same moment."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from interlock import InterruptOn, Reviewer, SqliteCheckpointer
from procs.harness import LineProcess

from .agents import QUERY, executions, make_agent
from .fakes import new_secret, webhook_receiver

if TYPE_CHECKING:
    from conftest import StoreFactory

TESTS = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def server(db: str, notify: Path, port: int, *extra: str) -> Iterator[subprocess.Popen[bytes]]:
    """``interlock serve`` in its own process; yields once it answers."""
    # stderr to a file: a server that logs more than a pipe holds must not block on it
    err = tempfile.TemporaryFile()  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        [sys.executable, "-c", "from interlock.cli import main; main()", "serve",
         "notify.agents:notify_agent", "--db", db, "--notify", str(notify), "--port", str(port),
         "--poll-interval", "0.1", "--expiry-interval", "0", "--log-level", "warning", *extra],
        cwd=TESTS, stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=1)
                break
            except httpx.HTTPError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err.seek(0)
                    raise AssertionError(f"interlock serve did not start: "
                                         f"{err.read().decode(errors='replace')}") from None
                time.sleep(0.1)
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(20)
        err.close()


def test_kill_9_between_commit_and_delivery_loses_nothing_and_doubles_nothing(
    tmp_path: Path,
) -> None:
    secret_a, secret_b = new_secret(), new_secret()
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    port = free_port()
    hold_first = threading.Event()
    first_arrived = threading.Event()
    with webhook_receiver(secret_a) as a, webhook_receiver(secret_b) as b:
        original = a.handle

        def slow_first(headers: dict[str, str], body: bytes) -> int:
            if not first_arrived.is_set():
                first_arrived.set()
                hold_first.wait(30)  # the server is killed while this request is open
            return original(headers, body)

        a.handle = slow_first  # type: ignore[method-assign]
        notify = tmp_path / "notify.toml"
        notify.write_text(
            f'public_url = "http://127.0.0.1:{port}"\n'
            f'[[webhooks]]\nname = "a"\nurl = "{a.url}"\nsecret = "{secret_a}"\n'
            f'[[webhooks]]\nname = "b"\nurl = "{b.url}"\nsecret = "{secret_b}"\n'
            f'[dispatch]\nlease = 1.0\npoll_interval = 0.05\nbackoff = 0.1\n')
        # 1. the request is committed by a server that does not deliver; it dies
        with server(db, notify, port, "--no-dispatch") as proc:
            started = httpx.post(f"http://127.0.0.1:{port}/api/threads?wait=true",
                                 json={"thread_id": "t1", "message": "clean up"}, timeout=30)
            assert started.json()["status"] == "interrupted"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        assert a.received == [] and b.received == []
        # 2. a delivering server starts, sends the event to "a" and dies before "a" answers
        with server(db, notify, port) as proc:
            assert first_arrived.wait(20)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        hold_first.set()
        store = SqliteCheckpointer(tmp_path / "db.sqlite")
        import asyncio

        (event,) = asyncio.run(store.outbox_list(thread_id="t1"))
        assert event.status == "pending"
        # 3. after a restart everything arrives; the repeat to "a" carries the same id
        with server(db, notify, port):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                done = asyncio.run(store.outbox_get(event.id))
                if done is not None and done.status == "delivered":
                    break
                time.sleep(0.1)
        asyncio.run(store.close())
    assert done is not None and done.status == "delivered"
    assert len(a.received) == 2 and len(b.received) == 1
    assert {r.headers["webhook-id"] for r in a.received + b.received} == {event.id}
    assert all(r.verified for r in a.received + b.received)
    assert [p["type"] for p in a.accepted] == ["request.raised"]  # once, after deduplication
    assert [p["type"] for p in b.accepted] == ["request.raised"]
    assert a.accepted[0]["data"]["thread_id"] == "t1"


def test_concurrent_final_approvals_from_two_processes_run_the_call_once(
    stores: StoreFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not stores.durable:
        pytest.skip("processes need a shared durable store")
    runs = tmp_path / "runs.txt"
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(runs))
    agent = make_agent(stores(), InterruptOn(approvals=2, reviewers=["dba"]))
    workers = [LineProcess("approve_worker.py", "--db", stores.url(), "--runs", str(runs),
                           "--reviewer", name) for name in ("bob", "carol")]
    try:
        for w in workers:
            assert w.recv(60) == "ready"
        outcomes: list[str] = []
        for n in range(3):
            tid = f"q{n}"
            agent.invoke("clean up", thread_id=tid)
            agent.resume(tid, [{"type": "approve"}], reviewer=Reviewer("alice",
                                                                        frozenset({"dba"})))
            for w in workers:
                w.send(f"go {tid}")
            outcomes += [w.recv(60) for w in workers]
            assert agent.get_thread(tid).status == "completed"
    finally:
        for w in workers:
            w.close()
    assert executions() == [QUERY] * 3  # each thread's call ran exactly once
    assert outcomes.count("result won") == 3, outcomes
    # the loser learns it lost in one of these ways, depending on when it looked
    assert all(o in ("result won", "result conflict", "result refused StaleInterrupt",
                     "result refused NoPendingInterrupt", "result refused InvalidDecision",
                     "result refused ThreadBusy") for o in outcomes), outcomes
    for n in range(3):
        deciders = [a.actor for a in agent.audit(f"q{n}") if a.kind == "decision"]
        assert len(deciders) == 1 and deciders[0] in ("bob", "carol")
    _ = (json, Any)
