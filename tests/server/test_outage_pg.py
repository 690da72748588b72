"""The database going away under `interlock serve` and `interlock worker`, with real processes.

At start, an unreachable database is one error line and a non-zero exit (before any port is
bound): a typo in --db or a database that is not running is not a server that starts and then
only logs. While running, an outage is retried by every background job (the inbox's change
feed, the recovery and expiry sweeps, the worker's queue claims) and logged once per job as a
one-line warning with the store's own message, not once per attempt with a traceback; each
job says when it works again, and the processes then serve and run as before.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from conftest import require_postgres
from interlock import PostgresCheckpointer

from .conftest import BOB, TOKENS, bearer
from .live import TESTS, ServeProcess
from .server_agents import make_agent
from .test_workers_pg import WorkerProcess


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("command", [
    ["serve", "server.server_agents:make_agent", "--port", "0"],
    ["serve", "server.server_agents:make_agent", "--port", "0", "--api-only"],
    ["worker", "server.server_agents:make_agent"],
])
def test_an_unreachable_database_stops_the_start_with_one_error_line(
        command: list[str]) -> None:
    url = f"postgresql://postgres@127.0.0.1:{_closed_port()}/test"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get(
        "PYTHONPATH", "")])}
    # a process of its own: a server that started anyway would run until the timeout
    done = subprocess.run([sys.executable, "-m", "interlock.cli", *command, "--db", url],
                          env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    errors = [line for line in output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, output
    assert f"interlock {command[0]} cannot start" in errors[0]
    assert "Cannot connect to Postgres" in errors[0] and "Check that the server runs" in errors[0]
    assert "Traceback" not in output
    assert "Uvicorn running" not in output and "worker for" not in output


def _wait(pred: Callable[[], bool], within: float, what: str,
          show: Callable[[], str] = lambda: "") -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}\n{show()}")


@pytest.mark.postgres
@pytest.mark.slow
def test_an_outage_is_logged_once_per_job_and_both_tiers_go_on_after_it(
        tmp_path: Path) -> None:
    from private_pg import PrivatePostgres

    require_postgres()
    pg = PrivatePostgres()
    processes: list[ServeProcess] = []
    try:
        store = PostgresCheckpointer(pg.dsn, connect_timeout=2)
        asyncio.run(store.list_threads(limit=1))  # the schema exists before the processes start
        asyncio.run(store.close())
        tokens = tmp_path / "tokens.json"
        tokens.write_text(json.dumps(TOKENS))
        log = tmp_path / "executions.jsonl"
        fast = ["--recovery-interval", "0.2", "--expiry-interval", "0.2"]
        # the agent's own store (no --db): a Postgres pool that waits 1 s, not 30, for a
        # connection, so that each attempt fails quickly while the database is down
        agent_spec, env = "server.outage_agents:make_agent", {"INTERLOCK_TEST_OUTAGE_DSN": pg.dsn}
        server = ServeProcess("server", None, tokens, log, fast, agent=agent_spec, env=env)
        processes.append(server)
        worker = WorkerProcess("worker", None, log, tmp_path / "release",
                               [*fast, "--poll-interval", "0.2"], agent=agent_spec, env=env)
        processes.append(worker)

        pg.stop()
        started = time.monotonic()
        with httpx.Client(timeout=60) as c:  # meanwhile a request that needs the store: 503
            r = c.get(f"{server.url}/api/threads", headers=bearer(BOB))
        assert r.status_code == 503, r.text
        assert f"127.0.0.1:{pg.port}/postgres is unreachable" in r.json()["message"]
        time.sleep(max(0.0, 6 - (time.monotonic() - started)))  # several attempts of each job
        pg.start()
        jobs = {
            "server": ["inbox watcher: reading the change feed", "recovery sweep",
                       "expiry sweep"],
            "worker": ["worker: claiming queued runs", "worker: recovery sweep",
                       "worker: expiry sweep"],
        }

        def recovered(p: ServeProcess | WorkerProcess, names: list[str]) -> bool:
            text = "".join(p.lines)
            return all(f"{n} works again" in text for n in names)

        _wait(lambda: recovered(server, jobs["server"]) and recovered(worker, jobs["worker"]),
              60, "every background job to say it works again",
              lambda: "".join(f"--- {p.name}\n{''.join(p.lines)}" for p in processes))

        # serve --log-level info shows interlock's own records, as the worker does
        assert any(line.startswith("INFO interlock.server: interlock review server for")
                   for line in server.lines), server.lines
        for p in processes:
            text = "".join(p.lines)
            assert "Traceback" not in text, f"{p.name} logged a traceback:\n{text}"
            told = [line for line in p.lines for name in jobs[p.name]
                    if f"{name} failed: " in line or f"{name} works again" in line]
            assert told and all(line.startswith(("WARNING interlock.server: ",
                                                 "WARNING interlock.worker: "))
                                for line in told), told
            for name in jobs[p.name]:
                failed = [line for line in p.lines if f"{name} failed: " in line]
                again = [int(m.group(1)) for line in p.lines
                         if (m := re.search(re.escape(name) + r" works again, after (\d+) "
                                            r"failed attempt", line))]
                assert again, (name, text)
                # the sweeps and claims try every 0.2 s, each attempt failing within about 1 s
                least = 1 if name.startswith("inbox watcher") else 3
                assert again[0] >= least and 1 <= len(failed) <= again[0], (name, again, failed)
                # once per outage, not once per attempt: a warning only when the error differs
                # from the one before (e.g. "server closed the connection", then "refused")
                said = [re.split(r" \((?:retrying|not retried)", line.split(" failed: ", 1)[1])[0]
                        for line in failed]
                assert all(a != b for a, b in itertools.pairwise(said)), (name, failed)
                assert all("repeats of this error are logged at debug level" in line
                           for line in failed)
                # the store's own one-line errors: unreachable, or (just after the restart)
                # answering again before the pool has replaced its broken connections
                assert all(f"failed: Postgres at postgres@127.0.0.1:{pg.port}/postgres " in line
                           for line in failed), failed

        # the server serves and runs again: a request raised through it pauses for review
        with httpx.Client(timeout=60) as c:
            r = c.post(f"{server.url}/api/threads", params={"wait": "true"},
                       headers=bearer(BOB), json={"message": "sql SELECT 1", "thread_id": "s1"})
            assert r.status_code == 200, r.text
            assert r.json()["status"] == "interrupted"
        # the worker claims and runs again: a run queued now is taken and pauses for review
        agent = make_agent(PostgresCheckpointer(pg.dsn, connect_timeout=2))
        try:
            queued = asyncio.run(agent.ainvoke("sql SELECT 2", thread_id="w1", handoff=True))
            assert queued.status != "interrupted"  # only stored and queued here
            _wait(lambda: agent.get_thread("w1").status == "interrupted", 30,
                  "the worker to run the queued thread")
        finally:
            agent.close()
        for p in processes:
            assert p.stop() == 0, "".join(p.lines)
    finally:
        for p in processes:
            if p.proc.poll() is None:
                p.proc.kill()
        pg.remove()


def test_a_repeating_jobs_failures_are_logged_once_per_outage(
        caplog: pytest.LogCaptureFixture) -> None:
    from interlock._failures import FailureLog
    from interlock.errors import StorageError

    log = logging.getLogger("interlock.test-failures")
    failures = FailureLog(log, "feed read")
    caplog.set_level(logging.DEBUG, logger=log.name)
    failures.worked()  # nothing failed: nothing to say
    for _ in range(3):
        failures.failed(StorageError("Postgres is down. Start it."), "retrying every 1 s")
    failures.failed(StorageError("Postgres is shutting down."))
    try:
        raise RuntimeError("a bug")
    except RuntimeError as exc:
        failures.failed(exc)
    failures.worked()
    failures.worked()
    failures.failed(StorageError("Postgres is down. Start it."))
    shown = [(r.levelno, r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert shown == [
        (logging.WARNING, "feed read failed: Postgres is down. Start it. (retrying every 1 s; "
         "repeats of this error are logged at debug level)", False),
        (logging.DEBUG, "feed read failed again (2 attempts so far): Postgres is down. "
         "Start it.", False),
        (logging.DEBUG, "feed read failed again (3 attempts so far): Postgres is down. "
         "Start it.", False),
        (logging.WARNING, "feed read failed: Postgres is shutting down. (retrying; repeats of "
         "this error are logged at debug level)", False),
        (logging.ERROR, "feed read failed; retrying", True),  # not ours: with its traceback
        (logging.WARNING, "feed read works again, after 5 failed attempts", False),
        (logging.WARNING, "feed read failed: Postgres is down. Start it. (retrying; repeats of "
         "this error are logged at debug level)", False),  # a new outage is told again
    ]


def test_a_failure_that_differs_only_in_its_numbers_is_a_repeat(
        caplog: pytest.LogCaptureFixture) -> None:
    """Behind a pooler in transaction mode the same protocol error names another prepared
    statement each time ("_pg3_3", "_pg3_17"): one warning, the repeats at debug."""
    from interlock._failures import FailureLog
    from interlock.errors import StorageError

    log = logging.getLogger("interlock.test-failures-numbers")
    failures = FailureLog(log, "inbox watcher")
    caplog.set_level(logging.DEBUG, logger=log.name)
    for n in (3, 17, 254):
        failures.failed(StorageError(
            f'bind message supplies 2 parameters, but prepared statement "_pg3_{n}" '
            f'requires 0'))
    failures.failed(StorageError("Postgres is down."))
    levels = [r.levelno for r in caplog.records]
    assert levels == [logging.WARNING, logging.DEBUG, logging.DEBUG, logging.WARNING]
