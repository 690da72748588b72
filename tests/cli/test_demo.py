"""`interlock demo` end to end: a real process, the real server, decisions through the API."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import interlock.server  # noqa: F401  (a declared dependency: missing is a failure)
from interlock.cli.demo import HINTS

from .helpers import child_env, cli_argv, demo_dir, sample_rows

URL_LINE = re.compile(r"^interlock demo: inbox at (http://127\.0\.0\.1:(\d+)/)$")
DEMO_THREADS = {"cleanup-cancelled-orders", "late-order-1042", "goodwill-credit",
                "weekly-report"}


class Demo:
    def __init__(self, data_dir: Path, extra: list[str] | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            cli_argv("demo", "--no-browser", "--port", "0", "--data-dir", str(data_dir),
                     *(extra or [])),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=env or child_env())
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for_url(self, timeout: float = 60) -> str:
        give_up = time.monotonic() + timeout
        while True:
            left = give_up - time.monotonic()
            assert left > 0, "no URL line within the time limit:\n" + "\n".join(self.output)
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            assert line is not None, "the demo exited:\n" + "\n".join(self.output)
            self.output.append(line)
            m = URL_LINE.match(line.strip())
            if m:
                assert int(m.group(2)) > 0
                return m.group(1)

    def rest_of_output(self) -> str:
        while True:
            line = self.lines.get(timeout=30)
            if line is None:
                return "\n".join(self.output)
            self.output.append(line)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # Ctrl-C
            try:
                return self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
        return self.proc.returncode


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Demo]:
    d = Demo(tmp_path / "demo-data")
    try:
        yield d
    finally:
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()


def _poll_thread(client: Any, thread_id: str, status: str, timeout: float = 30) -> Any:
    give_up = time.monotonic() + timeout
    while True:
        body = client.get(f"/api/threads/{thread_id}").json()
        if body["status"] == status:
            return body
        assert time.monotonic() < give_up, f"{thread_id} stayed {body['status']}: {body}"
        time.sleep(0.05)


def test_demo_serves_pending_runs_and_an_approval_completes_one(
        demo: Demo, tmp_path: Path) -> None:
    url = demo.wait_for_url()
    data = tmp_path / "demo-data"
    before = sample_rows(data, "SELECT COUNT(*) FROM orders WHERE status = 'cancelled' AND "
                               "created_at < '2024-01-01'")[0][0]
    assert before > 0
    with httpx.Client(base_url=url, timeout=30) as client:
        assert client.get("/").status_code == 200  # the web inbox
        inbox = client.get("/api/threads", params={"status": "interrupted"}).json()
        assert {t["thread_id"] for t in inbox["threads"]} == DEMO_THREADS

        thread = client.get("/api/threads/cleanup-cancelled-orders").json()
        [intr] = thread["interrupts"]
        [req] = intr["value"]["action_requests"]
        assert req["name"] == "execute_sql"
        assert req["args"]["query"].startswith("DELETE FROM orders")
        assert f"would delete {before} of" in req["description"]
        assert intr["value"]["review_configs"][0]["allowed_decisions"] == ["approve", "reject"]

        r = client.post("/api/threads/cleanup-cancelled-orders/decisions",
                        json={"interrupt_id": intr["id"], "decisions": [{"type": "approve"}]})
        assert r.status_code == 202, r.text
        done = _poll_thread(client, "cleanup-cancelled-orders", "completed")
        assert done["messages"][-1]["content"].startswith(f"Done: {before} row(s) affected.")
        assert [h["actor"] for h in done["history"] if h["kind"] == "decision"] == ["local"]

        # the same decision again is a conflict, not a second DELETE
        again = client.post("/api/threads/cleanup-cancelled-orders/decisions",
                            json={"interrupt_id": intr["id"],
                                  "decisions": [{"type": "approve"}]})
        assert again.status_code == 409

        still = client.get("/api/threads", params={"status": "interrupted"}).json()
        assert {t["thread_id"] for t in still["threads"]} == DEMO_THREADS - {
            "cleanup-cancelled-orders"}

    assert sample_rows(data, "SELECT COUNT(*) FROM orders WHERE status = 'cancelled' AND "
                             "created_at < '2024-01-01'") == [(0,)]
    assert sample_rows(data, "SELECT COUNT(*) FROM orders")[0][0] == 400 - before

    # a second demo on the same directory is refused and wipes nothing
    second = subprocess.run(
        cli_argv("demo", "--no-browser", "--port", "0", "--data-dir", str(data)),
        capture_output=True, text=True, env=child_env(), timeout=60)
    assert second.returncode == 1, second.stderr
    [line] = second.stderr.strip().splitlines()
    assert line.startswith(f"error: Another interlock demo (process {demo.proc.pid}) is "
                           f"running on {data}")
    assert "--data-dir" in line
    assert sample_rows(data, "SELECT COUNT(*) FROM orders")[0][0] == 400 - before
    with httpx.Client(base_url=url, timeout=30) as client:
        assert client.get("/api/threads/cleanup-cancelled-orders").json()["status"] == \
            "completed"

    assert demo.stop() == 0
    out = demo.rest_of_output()
    flat = " ".join(out.split())
    assert "interlock review --agent interlock.demo:agent --reviewer" in flat
    # the commands work in a new terminal window, where the virtual environment is not
    # activated: they name the command by its full path
    [threads] = [line.strip() for line in out.splitlines()
                 if re.search(r"interlock threads --db ", line)]
    assert threads.startswith("/"), threads
    window = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"),
              "LANG": "C.UTF-8", "COLUMNS": "200"}
    listed = subprocess.run(["bash", "-c", threads], capture_output=True, text=True,
                            env=window, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert "cleanup-cancelled-orders" in listed.stdout
    for hint in HINTS.values():  # the banner says what docs/cli.md says
        assert hint in flat, hint
    assert "Demo stopped" in out


@pytest.mark.parametrize("command", ["demo", "serve"])
def test_a_port_in_use_is_one_line_and_exit_1(tmp_path: Path, command: str) -> None:
    import socket

    if command == "serve":
        demo_dir(tmp_path / "d")
    args = (["demo", "--no-browser", "--data-dir", str(tmp_path / "d")] if command == "demo"
            else ["serve", "interlock.demo:agent"])
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            cli_argv(*args, "--port", str(port)), capture_output=True, text=True,
            env=child_env(INTERLOCK_DEMO_DIR=str(tmp_path / "d")), timeout=60)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot listen on 127.0.0.1:{port}")
