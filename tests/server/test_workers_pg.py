"""Separate API and worker tiers on Postgres, with real processes: `interlock serve --api-only`
stores input and decisions and queues the runs; `interlock worker` processes claim and run
them. Each approved call runs exactly once; a worker killed with SIGKILL in the middle of a
tool is replaced by another one through the lease and journal rules; a change made through one
process reaches another process's SSE stream through LISTEN/NOTIFY, not at its next poll."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from conftest import PG_DSN, StoreFactory, require_postgres
from interlock.cli import main as cli

from .conftest import ADMIN, ALICE, BOB, TOKENS, bearer
from .live import TESTS, ServeProcess
from .test_multiprocess_pg import Stream, executions


class WorkerProcess(ServeProcess):
    """``interlock worker server.server_agents:make_agent`` as a real process (stopped like
    the server, with SIGINT)."""

    def __init__(self, name: str, db_url: str | None, exec_log: Path, release: Path,
                 extra_args: Sequence[str] = (),
                 agent: str = "server.server_agents:make_agent",
                 env: dict[str, str] | None = None) -> None:
        self.name = name
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get(
            "PYTHONPATH", "")]), "INTERLOCK_TEST_EXEC_LOG": str(exec_log),
            "INTERLOCK_TEST_RELEASE": str(release), **(env or {})}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "interlock.cli", "worker", agent,
             *(["--db", db_url] if db_url else []), "--log-level", "info", *extra_args],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        ready = threading.Event()

        def read() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.lines.append(line)
                if "interlock: worker for" in line:
                    ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(30):
            self.stop()
            raise AssertionError(f"{name} did not start:\n{''.join(self.lines)}")

    @property
    def pid(self) -> int:
        return self.proc.pid


# -- fast: the API-only mode and the worker need a store with a run queue --------------------


@pytest.mark.parametrize("command", [
    ["serve", "server.server_agents:make_agent", "--api-only"],
    ["worker", "server.server_agents:make_agent"],
])
def test_api_only_and_workers_are_refused_without_postgres(
        command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    result = CliRunner().invoke(cli, [*command, "--db", f"sqlite:///{tmp_path / 'x.db'}"])
    assert result.exit_code == 2, result.output
    assert "run queue" in result.output
    assert "SqliteCheckpointer" in result.output
    assert "Postgres" in result.output


# -- slow: real processes on a real Postgres --------------------------------------------------


@pytest.fixture
def tier(tmp_path: Path) -> Iterator[dict[str, Any]]:
    require_postgres()
    pg = StoreFactory("postgres", tmp_path)
    import asyncio

    asyncio.run(pg().list_threads(limit=1))  # the schema exists before the processes race
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    log = tmp_path / "executions.jsonl"
    log.touch()
    started: list[Any] = []
    env = {"url": pg.url(), "tokens": tokens, "log": log, "release": tmp_path / "release",
           "started": started, "schema": pg.pg_schema}
    try:
        yield env
    finally:
        codes = []
        for p in reversed(started):
            if p.proc.poll() is None:
                codes.append((p.name, p.stop()))
        pg.cleanup()
        for p in started:
            if any("Traceback" in line for line in p.lines):
                raise AssertionError(f"{p.name} logged a traceback:\n{''.join(p.lines)}")
            # --db replaced the agent's own store: nothing says it runs on another one
            assert not any("MemoryCheckpointer" in line for line in p.lines), p.lines
        assert all(code == 0 for _, code in codes), codes


def api(tier: dict[str, Any], name: str, *args: str, **options: Any) -> ServeProcess:
    s = ServeProcess(name, tier["url"], tier["tokens"], tier["log"], ["--api-only", *args],
                     **options)
    tier["started"].append(s)
    return s


def worker(tier: dict[str, Any], name: str, *args: str, **options: Any) -> WorkerProcess:
    w = WorkerProcess(name, tier["url"], tier["log"], tier["release"], args, **options)
    tier["started"].append(w)
    return w


def listening(schema: str) -> int:
    """How many connections LISTEN for the change signals of ``schema`` (one per process:
    each process's store listens on one connection for all its topics)."""
    import psycopg

    from interlock.storage.postgres import channel_name

    prefix = channel_name(schema, "changes").removesuffix("changes")
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        row = conn.execute("SELECT count(DISTINCT pid) FROM pg_stat_activity "
                           "WHERE state = 'idle' AND query LIKE %s",
                           [f'LISTEN "{prefix}%']).fetchone()
    return int(row[0]) if row else 0


def wait_for(pred: Any, within: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def approve(c: httpx.Client, url: str, thread_id: str, interrupt_id: str) -> httpx.Response:
    """alice approves ``interrupt_id`` of ``thread_id`` through the server at ``url``."""
    return c.post(f"{url}/api/threads/{thread_id}/decisions", headers=bearer(ALICE),
                  json={"interrupt_id": interrupt_id, "decisions": [{"type": "approve"}]})


def pause_and_approve(c: httpx.Client, url: str, prefix: str, n: int) -> list[dict[str, Any]]:
    """bob starts ``n`` runs (threads PREFIX0...) through the server at ``url``, each asking
    for ``UPDATE t SET n = i``, and alice approves each (eight at a time); every answer must
    be 202. The paused runs, as the server answered."""
    def start(i: int) -> dict[str, Any]:
        r = c.post(f"{url}/api/threads", params={"wait": "true"}, headers=bearer(BOB),
                   json={"message": f"sql UPDATE t SET n = {i}", "thread_id": f"{prefix}{i}"})
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    with ThreadPoolExecutor(8) as pool:
        paused = list(pool.map(start, range(n)))
        assert all(p["status"] == "interrupted" for p in paused)
        answers = list(pool.map(lambda i: approve(c, url, f"{prefix}{i}",
                                                  paused[i]["interrupts"][0]["id"]), range(n)))
    assert [r.status_code for r in answers] == [202] * n, [r.text for r in answers]
    return paused


@pytest.mark.postgres
@pytest.mark.slow
def test_api_only_server_and_two_workers_run_each_approval_once(tmp_path: Path,
                                                                 tier: dict[str, Any]) -> None:
    server = api(tier, "api")
    workers = [worker(tier, "worker 1"), worker(tier, "worker 2")]
    n = 24
    with httpx.Client(timeout=60) as c:
        paused = pause_and_approve(c, server.url, "w", n)
        # the same decision again: refused, nothing queued twice
        again = approve(c, server.url, "w0", paused[0]["interrupts"][0]["id"])
        assert again.status_code == 409, again.text

        def all_done() -> bool:
            listed = c.get(f"{server.url}/api/threads", params={"limit": 100},
                           headers=bearer(ALICE)).json()["threads"]
            return sum(t["status"] == "completed" for t in listed) == n

        wait_for(all_done, 60, "every run to complete")
        t = c.get(f"{server.url}/api/threads/w3", headers=bearer(ALICE)).json()
        assert t["messages"][-1]["content"] == "Done. OK: ran UPDATE t SET n = 3"
    runs = executions(tier["log"])
    for i in range(n):
        mine = [e for e in runs if e["args"] == {"query": f"UPDATE t SET n = {i}"}]
        assert len(mine) == 1, mine
    by = {e["pid"] for e in runs}
    assert server.proc.pid not in by  # the API process ran no tool
    assert by <= {w.pid for w in workers}
    import asyncio

    from interlock import PostgresCheckpointer

    store = PostgresCheckpointer(tier["url"].split("?")[0],
                                 schema=tier["url"].split("%3D")[-1])
    try:
        assert asyncio.run(store.queue_list()) == []  # every queue entry was removed
    finally:
        asyncio.run(store.close())


def approve_hanging_call(c: httpx.Client, server: ServeProcess, log: Path, thread_id: str,
                         query: str) -> None:
    """Start ``hang QUERY`` on a thread, approve it, and wait until a worker runs the tool."""
    r = c.post(f"{server.url}/api/threads", params={"wait": "true"}, headers=bearer(BOB),
               json={"message": f"hang {query}", "thread_id": thread_id})
    assert r.status_code == 200, r.text
    intr = r.json()["interrupts"][0]
    r = approve(c, server.url, thread_id, intr["id"])
    assert r.status_code == 202, r.text
    wait_for(lambda: any(e["name"] == "hang_sql:started" for e in executions(log)),
             30, "the tool to start")


@pytest.mark.postgres
@pytest.mark.slow
def test_a_worker_killed_mid_tool_is_replaced_and_the_tool_is_not_run_again(
        tmp_path: Path, tier: dict[str, Any]) -> None:
    server = api(tier, "api")
    first = worker(tier, "worker 1", "--claim-lease", "1")
    log: Path = tier["log"]
    with httpx.Client(timeout=60) as c:
        approve_hanging_call(c, server, log, "k1", "UPDATE accounts SET x = 1")
        first.proc.send_signal(signal.SIGKILL)  # in the middle of the tool
        first.proc.wait(10)
        tier["release"].touch()  # a tool started from now on would finish at once
        # no recovery sweep: worker 2 can only find the thread by claiming the queue entry
        # again once worker 1's claim ran out
        second = worker(tier, "worker 2", "--claim-lease", "1", "--recovery-interval", "0")

        def asked() -> dict[str, Any] | None:
            t = c.get(f"{server.url}/api/threads/k1", headers=bearer(ALICE)).json()
            return t if t["status"] == "interrupted" else None

        t = wait_for(asked, 30, "the outcome-unknown request")
        # the documented rule (docs/durability.md, Recovery): a non-idempotent call that was
        # running when its process died becomes `unknown` and is put to a reviewer
        pending = t["interrupts"][0]
        assert [a["reason"] for a in pending["value"]["action_requests"]] == [
            "outcome_unknown"], pending
        history = [h["kind"] for h in t["history"]]
        assert "outcome_unknown" in history and "recovered" in history
        started = [e for e in executions(log) if e["name"] == "hang_sql:started"]
        assert [e["pid"] for e in started] == [first.pid]  # not run again by worker 2
        assert not [e for e in executions(log) if e["name"] == "hang_sql"]  # never finished
        # the reviewer knows it took effect: the run goes on without running it again
        r = c.post(f"{server.url}/api/threads/k1/decisions", params={"wait": "true"},
                   headers=bearer(ALICE),
                   json={"interrupt_id": pending["id"],
                         "decisions": [{"type": "respond", "message": "it ran"}]})
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "completed"
        assert r.json()["output"] == "Done. it ran"
    assert [e["name"] for e in executions(log)] == ["hang_sql:started"]
    assert second.proc.poll() is None


@pytest.mark.postgres
@pytest.mark.slow
def test_changes_reach_another_process_stream_through_notify_not_polling(
        tmp_path: Path, tier: dict[str, Any]) -> None:
    # every process polls once as it starts and then only every hour: what arrives within
    # the test's minutes came through LISTEN/NOTIFY
    a = api(tier, "api A", "--poll-interval", "3600")
    b = api(tier, "api B", "--poll-interval", "3600")
    worker(tier, "worker", "--poll-interval", "3600")
    inbox_b = Stream(f"{b.url}/api/inbox/events", BOB)
    wait_for(lambda: listening(tier["schema"]) >= 3, within=60,
             what="the two servers and the worker to LISTEN")
    with httpx.Client(timeout=30) as c:
        r = c.post(f"{a.url}/api/threads", headers=bearer(BOB),
                   json={"message": "sql DELETE FROM sessions", "thread_id": "n1"})
        assert r.status_code == 202, r.text
        raised = inbox_b.until(lambda e: e["event"] == "request_raised"
                               and e["data"]["thread"]["thread_id"] == "n1", within=120)
        r = c.post(f"{a.url}/api/threads/n1/decisions", headers=bearer(ALICE),
                   json={"interrupt_id": raised["data"]["interrupt_id"],
                         "decisions": [{"type": "approve"}]})
        assert r.status_code == 202, r.text
        inbox_b.until(lambda e: e["event"] == "request_resolved"
                      and e["data"]["thread"]["thread_id"] == "n1", within=120)
        inbox_b.until(lambda e: e["event"] == "thread_updated"
                      and e["data"]["thread"]["thread_id"] == "n1"
                      and e["data"]["thread"]["status"] == "completed", within=120)
    assert len([e for e in executions(tier["log"])
                if e["args"] == {"query": "DELETE FROM sessions"}]) == 1


@pytest.mark.postgres
@pytest.mark.slow
def test_a_worker_gives_its_sub_agents_the_database_too(tmp_path: Path,
                                                         tier: dict[str, Any]) -> None:
    """``interlock worker --db`` replaces the store of the agent and of the agents behind its
    sub-agent tools (as ``serve --db`` does): the children's threads are in Postgres, their
    requests show on the parent through the API server, and approving both finishes the run
    with each child's tool run once."""
    team = "server.subagent_agents:make_lead"
    effects = tmp_path / "effects.txt"
    env = {"INTERLOCK_TEST_EFFECTS": str(effects)}
    server = api(tier, "api", agent=team, env=env)
    worker(tier, "worker", agent=team, env=env)
    with httpx.Client(timeout=60, base_url=server.url, headers=bearer(ALICE)) as c:
        r = c.post("/api/threads", json={"message": "clean up", "thread_id": "team-1"})
        assert r.status_code == 202, r.text

        def paused() -> dict[str, Any] | None:
            t: dict[str, Any] = c.get("/api/threads/team-1").json()
            return t if t["status"] == "interrupted" and len(t["interrupts"]) == 2 else None

        detail = wait_for(paused, 60, "both sub-agents' requests on the parent")
        children = c.get("/api/threads", params={"subagents": "true"}).json()["threads"]
        assert {t["thread_id"] for t in children} == {
            "team-1", "team-1@ask_researcher", "team-1@ask_dba"}
        for intr in detail["interrupts"]:
            r = c.post("/api/threads/team-1/decisions", json={
                "interrupt_id": intr["id"], "decisions": [{"type": "approve"}]})
            assert r.status_code == 202, r.text
        done = wait_for(lambda: (t := c.get("/api/threads/team-1").json())["status"]
                        == "completed" and t, 60, "the parent to complete")
    answer = done["messages"][-1]["content"]
    assert "researcher: deleted notes.txt" in answer and "dba: dropped users" in answer
    ran = effects.read_text().splitlines()
    assert sorted(line.split("|")[0] for line in ran) == ["delete_file", "drop_table"]


@pytest.mark.postgres
@pytest.mark.slow
def test_langgraph_clients_on_an_api_only_server_with_a_worker(tier: dict[str, Any]) -> None:
    """The LangGraph-compatible API of an API-only server: the real ``langgraph-sdk`` client
    waits for a run that a worker process executes, sees it pause, resumes it with
    ``command.resume`` and gets the finished state; the tool runs once, in the worker."""
    from langgraph_sdk import get_sync_client

    server = api(tier, "api", "--langgraph-api")
    runner = worker(tier, "worker")
    client = get_sync_client(url=server.url + "/langgraph", api_key=ALICE)
    tid = client.threads.create()["thread_id"]
    out = client.runs.wait(tid, "agent", input={
        "messages": [{"role": "user", "content": "sql DELETE FROM old_rows"}]})
    (pending,) = out["__interrupt__"]
    assert pending["value"]["action_requests"][0]["args"] == {"query": "DELETE FROM old_rows"}
    assert client.threads.get(tid)["status"] == "interrupted"
    assert executions(tier["log"]) == []
    done = client.runs.wait(tid, "agent", command={"resume": {
        pending["id"]: {"type": "approve"}}})
    assert done["messages"][-1]["content"] == "Done. OK: ran DELETE FROM old_rows"
    assert client.threads.get(tid)["status"] == "idle"
    runs = executions(tier["log"])
    assert [(e["name"], e["args"]) for e in runs] == [
        ("execute_sql", {"query": "DELETE FROM old_rows"})]
    assert [e["pid"] for e in runs] == [runner.pid]  # run by the worker, not the API server


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.parametrize("grace", ["5", "0.5"])
def test_a_worker_stopped_with_sigterm_mid_tool_stores_the_result(
        tmp_path: Path, tier: dict[str, Any], grace: str) -> None:
    """SIGTERM while a sync tool runs: the worker claims nothing more, lets the tool finish
    (within its shutdown grace, or, past it, the run is cancelled and the tool waited for up
    to the agent's tool grace), stores the result and exits cleanly; the next worker goes on
    from there and nobody is asked "outcome unknown" about the tool that ran."""
    server = api(tier, "api")
    first = worker(tier, "worker 1", "--shutdown-grace", grace)
    log: Path = tier["log"]
    with httpx.Client(timeout=60) as c:
        approve_hanging_call(c, server, log, "g1", "UPDATE accounts SET x = 2")
        first.proc.send_signal(signal.SIGTERM)  # in the middle of the tool
        time.sleep(1.0)  # past the short grace, within the long one
        tier["release"].touch()
        assert first.proc.wait(30) == 0, "".join(first.lines)
        output = "".join(first.lines)
        assert "cannot schedule new futures" not in output, output
        assert [e["name"] for e in executions(log)] == ["hang_sql:started", "hang_sql"]
        worker(tier, "worker 2", "--claim-lease", "1")

        def settled() -> dict[str, Any] | None:
            t = c.get(f"{server.url}/api/threads/g1", headers=bearer(ALICE)).json()
            return t if t["status"] in ("completed", "interrupted") else None

        t = wait_for(settled, 60, "the run to settle")
        assert t["status"] == "completed", t
        assert t["messages"][-1]["content"] == "Done. OK: ran UPDATE accounts SET x = 2"
        assert "outcome_unknown" not in [h["kind"] for h in t["history"]]
    assert [e["name"] for e in executions(log)] == ["hang_sql:started", "hang_sql"]


@pytest.mark.postgres
@pytest.mark.slow
def test_a_workers_run_events_reach_only_those_who_may_read_the_thread(
        tier: dict[str, Any]) -> None:
    """The events a worker relays (its tool's result, the model's answer) are published with
    the thread's readers, as a server's own run's are: bob could read the thread while its
    call waited for anyone's decision; once alice approved it, his stream of the thread gets
    none of what the worker did (nor does his inbox get the thread's outcome)."""
    server = api(tier, "api")
    worker(tier, "worker")
    base = server.url
    r = httpx.post(f"{base}/api/threads", headers=bearer(ADMIN), params={"wait": "true"},
                   json={"thread_id": "relay", "message": "sql SELECT 'SECRET-7'"}, timeout=60)
    assert r.status_code == 200 and r.json()["status"] == "interrupted", r.text
    assert httpx.get(f"{base}/api/threads/relay", headers=bearer(BOB)).status_code == 200
    got: list[str] = []

    def listen(path: str) -> None:
        with contextlib.suppress(httpx.HTTPError), httpx.stream(
                "GET", f"{base}{path}", headers=bearer(BOB), timeout=8) as s:
            for line in s.iter_lines():
                got.append(line)

    threads = [threading.Thread(target=listen, args=(p,), daemon=True)
               for p in ("/api/threads/relay/events", "/api/inbox/events")]
    for t in threads:
        t.start()
    time.sleep(1)
    r = httpx.post(f"{base}/api/threads/relay/decisions", headers=bearer(ALICE),
                   params={"wait": "true"}, json={"decisions": [{"type": "approve"}]},
                   timeout=60)
    assert r.status_code == 200 and r.json()["status"] == "completed", r.text
    for t in threads:
        t.join(10)
    assert httpx.get(f"{base}/api/threads/relay", headers=bearer(BOB)).status_code == 403
    text = "\n".join(got)
    heard = [line for line in got if line.startswith("event: ")]
    assert not {"event: tool_finished", "event: tool_started", "event: run_completed",
                "event: model_text_delta"} & set(heard), heard
    assert "ran SELECT" not in text and "Done." not in text, text
