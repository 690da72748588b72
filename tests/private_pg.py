"""A Postgres server of a test's own (initdb + pg_ctl on a free port), for tests that stop,
start or break the database: the shared server on 127.0.0.1:5432 is never touched."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest


class PrivatePostgres:
    """A Postgres server of this test's own (initdb + pg_ctl on a free port), so that it can
    be stopped and started without touching the shared one."""

    def __init__(self) -> None:
        import shutil
        import socket
        import tempfile

        self.pg_ctl = shutil.which("pg_ctl")
        initdb = shutil.which("initdb")
        if self.pg_ctl is None or initdb is None:
            pytest.fail("pg_ctl / initdb are needed to start a private Postgres")
        self.root = Path(tempfile.mkdtemp(prefix="interlock-pg-"))
        self.data = self.root / "data"
        self.as_user: list[str] = []
        if os.geteuid() == 0:  # initdb refuses to run as root
            self.as_user = ["runuser", "-u", "postgres", "--"]
            shutil.chown(self.root, "postgres")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self._run([initdb, "-D", str(self.data), "-A", "trust", "-U", "postgres",
                   "--no-sync"])
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.start()

    def _run(self, cmd: list[str]) -> None:
        done = subprocess.run([*self.as_user, *cmd], capture_output=True, text=True,
                              timeout=120)
        if done.returncode != 0:
            pytest.fail(f"{' '.join(cmd)} failed: {done.stderr[-2000:]}")

    def start(self) -> None:
        assert self.pg_ctl is not None
        self._run([self.pg_ctl, "-D", str(self.data), "-l", str(self.root / "log"), "-w",
                   "-o", f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
                   f"-c fsync=off", "start"])

    def stop(self) -> None:
        assert self.pg_ctl is not None
        self._run([self.pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop"])

    def remove(self) -> None:
        import shutil

        with contextlib.suppress(BaseException):
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
