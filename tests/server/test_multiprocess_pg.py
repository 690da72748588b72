"""Two `interlock serve` processes on one Postgres database: a decision posted to one runs
exactly once and shows up in the other's inbox stream; racing decisions on both give one
winner and one 409."""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import StoreFactory, require_postgres

from .conftest import ALICE, BOB, TOKENS, bearer
from .live import ServeProcess

pytestmark = [pytest.mark.postgres, pytest.mark.slow]



class Stream:
    """An SSE stream read in a background thread."""

    def __init__(self, url: str, token: str) -> None:
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.open = threading.Event()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(url, token), daemon=True)
        self.thread.start()
        assert self.open.wait(10), "stream did not open"

    def _run(self, url: str, token: str) -> None:
        with httpx.Client(timeout=httpx.Timeout(5, read=None)) as c, \
                c.stream("GET", url, headers=bearer(token)) as r:
            assert r.status_code == 200
            self.open.set()
            block: dict[str, str] = {}
            for line in r.iter_lines():
                if self._stop.is_set():
                    return
                if not line:
                    if "event" in block:
                        self.events.put({"event": block["event"],
                                         "data": json.loads(block.get("data", "null"))})
                    block = {}
                elif not line.startswith(":") and ":" in line:
                    k, _, v = line.partition(":")
                    block[k] = v.lstrip(" ")

    def until(self, pred: Any, within: float = 15.0) -> dict[str, Any]:
        deadline = time.monotonic() + within
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("expected event did not arrive")
            ev = self.events.get(timeout=left)
            if pred(ev):
                return ev


@pytest.fixture
def pg(tmp_path: Path) -> Iterator[StoreFactory]:
    require_postgres()
    factory = StoreFactory("postgres", tmp_path)
    yield factory
    factory.cleanup()


@pytest.fixture
def two_servers(pg: StoreFactory, tmp_path: Path) -> Iterator[tuple[ServeProcess, ServeProcess,
                                                                     Path]]:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    exec_log = tmp_path / "executions.jsonl"
    exec_log.touch()
    url = pg.url()
    # create the schema once, before two processes race to migrate it
    import asyncio

    store = pg()
    asyncio.run(store.list_threads(limit=1))
    a = ServeProcess("server A", url, tokens, exec_log)
    try:
        b = ServeProcess("server B", url, tokens, exec_log)
    except BaseException:
        a.stop()
        raise
    try:
        yield a, b, exec_log
    finally:
        codes = (a.stop(), b.stop())
        assert codes == (0, 0), (codes, "".join(a.lines), "".join(b.lines))


def executions(log: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in log.read_text().splitlines() if x.strip()]


def test_decision_on_one_process_runs_once_and_reaches_the_others_inbox(
    two_servers: tuple[ServeProcess, ServeProcess, Path]
) -> None:
    a, b, log = two_servers
    inbox_b = Stream(f"{b.url}/api/inbox/events", BOB)
    with httpx.Client(timeout=30) as c:
        r = c.post(f"{a.url}/api/threads", params={"wait": "true"}, headers=bearer(BOB),
                   json={"message": "sql DELETE FROM old_orders", "thread_id": "mp1"})
        assert r.status_code == 200, r.text
        intr = r.json()["interrupts"][0]
        raised = inbox_b.until(lambda e: e["event"] == "request_raised"
                               and e["data"]["thread"]["thread_id"] == "mp1")
        assert raised["data"]["interrupt_id"] == intr["id"]
        r = c.post(f"{a.url}/api/threads/mp1/decisions", headers=bearer(ALICE),
                   json={"interrupt_id": intr["id"], "decisions": [{"type": "approve"}]})
        assert r.status_code == 202, r.text
        resolved = inbox_b.until(lambda e: e["event"] == "request_resolved"
                                 and e["data"]["thread"]["thread_id"] == "mp1")
        assert resolved["data"]["interrupt_id"] == intr["id"]
        inbox_b.until(lambda e: e["event"] == "thread_updated"
                      and e["data"]["thread"]["thread_id"] == "mp1"
                      and e["data"]["thread"]["status"] == "completed")
        t = c.get(f"{b.url}/api/threads/mp1", headers=bearer(BOB)).json()
        assert t["status"] == "completed"
        assert t["messages"][-1]["content"] == "Done. OK: ran DELETE FROM old_orders"
        decision = next(h for h in t["history"] if h["kind"] == "decision")
        assert decision["actor"] == "alice"
    runs = [e for e in executions(log) if e["args"] == {"query": "DELETE FROM old_orders"}]
    assert len(runs) == 1
    assert runs[0]["pid"] == a.proc.pid


def test_racing_decisions_on_both_processes_run_once(
    two_servers: tuple[ServeProcess, ServeProcess, Path]
) -> None:
    a, b, log = two_servers
    with httpx.Client(timeout=30) as c:
        ids = {}
        for n in range(5):
            r = c.post(f"{a.url}/api/threads", params={"wait": "true"}, headers=bearer(BOB),
                       json={"message": f"sql UPDATE stock SET n = {n}", "thread_id": f"race{n}"})
            ids[n] = r.json()["interrupts"][0]["id"]

        def decide(server: ServeProcess, n: int) -> httpx.Response:
            with httpx.Client(timeout=30) as cc:
                return cc.post(f"{server.url}/api/threads/race{n}/decisions",
                               params={"wait": "true"}, headers=bearer(ALICE),
                               json={"interrupt_id": ids[n],
                                     "decisions": [{"type": "approve"}]})

        with ThreadPoolExecutor(10) as pool:
            futures = [(n, pool.submit(decide, s, n)) for n in ids for s in (a, b)]
            results: dict[int, list[httpx.Response]] = {}
            for n, fut in futures:
                results.setdefault(n, []).append(fut.result())
        for n, pair in results.items():
            codes = sorted(r.status_code for r in pair)
            assert codes == [200, 409], [r.text for r in pair]
            loser = next(r for r in pair if r.status_code == 409).json()
            assert loser["error"] in ("InterruptConflict", "ThreadBusy", "StaleInterrupt")
            t = c.get(f"{b.url}/api/threads/race{n}", headers=bearer(ALICE)).json()
            assert [h["kind"] for h in t["history"]].count("decision") == 1
    for n in ids:
        runs = [e for e in executions(log) if e["args"] == {"query": f"UPDATE stock SET n = {n}"}]
        assert len(runs) == 1, runs

