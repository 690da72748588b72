"""Parent side of the multi-process tests: start helper programs and talk to them by lines
on stdin / stdout, with a deadline on every read (a hung child fails the test instead of
hanging it)."""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

PROCS = Path(__file__).parent


class LineProcess:
    """A child running ``tests/procs/<script>`` that reads commands and answers by lines."""

    def __init__(self, script: str, *args: str) -> None:
        # stderr to a file: a child that logs more than a pipe holds must not block on it
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            [sys.executable, str(PROCS / script), *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            text=True, bufsize=1, cwd=PROCS, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self._sel = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        self._sel.register(self.proc.stdout, selectors.EVENT_READ)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def recv(self, timeout: float) -> str:
        """The next line from the child; fails with the child's stderr if none comes in time."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self._sel.select(left):
                raise AssertionError(f"no answer within {timeout}s from {self.describe()}")
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"{self.describe()} exited: {self.stderr()}")
            return line.rstrip("\n")

    def describe(self) -> str:
        return f"child {self.proc.pid} ({' '.join(self.proc.args[1:3])})"  # type: ignore[index]

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-4000:]

    def close(self, timeout: float = 30) -> int:
        """Ask the child to quit; kill it if it does not."""
        if self.proc.poll() is None:
            try:
                self.send("quit")
                self.proc.wait(timeout)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        self._stderr.close()
        self._sel.close()
        return self.proc.returncode


def race_round(workers: list[LineProcess], task: str) -> list[str]:
    """Arm every worker with the ``task`` line, then release them together; their answers."""
    for w in workers:
        w.send(task)
    for w in workers:
        assert w.recv(60) == "armed"
    for w in workers:
        w.send("go")
    return [w.recv(120) for w in workers]


def race_rounds(workers: list[LineProcess], repetitions: int,
                pause: Callable[[int], tuple[str, str]]) -> Counter[str]:
    """Race ``workers`` over one interrupt, ``repetitions`` times: ``pause(rep)`` makes a
    paused thread and gives ``(thread_id, interrupt_id)``; every round exactly one worker must
    win and the others get a conflict. Waits for the workers to be ready first and closes
    them at the end (all must exit 0). Returns where the losers found out, counted."""
    where: Counter[str] = Counter()
    try:
        for w in workers:
            assert w.recv(60) == "ready"
        for rep in range(repetitions):
            thread, iid = pause(rep)
            results = race_round(workers, f"task {thread} {iid}")
            kinds = Counter(r.split()[1] for r in results)
            assert kinds == Counter({"won": 1, "conflict": len(workers) - 1}), (rep, results)
            where.update(r.split()[2] for r in results if r.split()[1] == "conflict")
    finally:
        codes = [w.close() for w in workers]
    assert codes == [0] * len(workers)
    return where
