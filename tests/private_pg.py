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

    def __init__(self, standby_of: PrivatePostgres | None = None) -> None:
        """A new cluster (initdb), or with ``standby_of`` a streaming standby of that one
        (pg_basebackup with ``standby.signal``), started."""
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
        if standby_of is None:
            self._run([initdb, "-D", str(self.data), "-A", "trust", "-U", "postgres",
                       "--no-sync"])
        else:  # the tools of the same version as pg_ctl, not whatever else is on PATH
            basebackup = Path(os.path.realpath(self.pg_ctl)).parent / "pg_basebackup"
            self._run([str(basebackup), "-D", str(self.data), "-h", "127.0.0.1",
                       "-p", str(standby_of.port), "-U", "postgres", "-X", "stream", "-R",
                       "--no-sync"])
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.start()

    def promote(self) -> None:
        """Make a standby the primary (``pg_ctl promote``, waiting until it takes writes)."""
        assert self.pg_ctl is not None
        self._run([self.pg_ctl, "-D", str(self.data), "-w", "promote"])

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


class PrivatePgBouncer:
    """Debian's PgBouncer of this test's own, on a free port in front of a private Postgres,
    with its own ini (any user, no password: ``auth_type = trust``)."""

    def __init__(self, pg: PrivatePostgres, pool_mode: str, *, pool_size: int = 20,
                 users: tuple[str, ...] = ("postgres",), **settings: object) -> None:
        import shutil
        import socket
        import tempfile
        import time

        exe = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
        if not Path(exe).exists():
            pytest.fail("pgbouncer is needed (apt-get install pgbouncer; scripts/test.sh "
                        "installs it)")
        self.root = Path(tempfile.mkdtemp(prefix="interlock-pgbouncer-"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        (self.root / "users.txt").write_text("".join(f'"{u}" ""\n' for u in users))
        extra = "".join(f"{k} = {v}\n" for k, v in settings.items())
        self.ini = self.root / "pgbouncer.ini"
        self.ini.write_text(
            f"[databases]\n* = host=127.0.0.1 port={pg.port}\n"
            f"[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {self.port}\n"
            f"unix_socket_dir =\nauth_type = trust\nauth_file = {self.root / 'users.txt'}\n"
            f"pool_mode = {pool_mode}\ndefault_pool_size = {pool_size}\n"
            f"max_client_conn = 500\nlogfile = {self.root / 'pgbouncer.log'}\n"
            f"pidfile = {self.root / 'pgbouncer.pid'}\n{extra}")
        as_user: list[str] = []
        if os.geteuid() == 0:  # pgbouncer refuses to run as root
            as_user = ["runuser", "-u", "postgres", "--"]
            for path in (self.root, *self.root.iterdir()):
                shutil.chown(path, "postgres")
        # PgBouncer logs to stderr as well as to its logfile, and blocks when a write does not
        # go through: stderr goes to a file, never to a pipe nobody reads (a full pipe froze
        # every client of the pooler once its log passed 64 KB)
        self._stderr = open(self.root / "stderr.log", "wb")  # noqa: SIM115 (closed in remove)
        self.proc = subprocess.Popen([*as_user, exe, str(self.ini)],
                                     stdout=subprocess.DEVNULL, stderr=self._stderr)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"pgbouncer exited: {self.log()}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    break
            time.sleep(0.05)
        else:
            pytest.fail(f"pgbouncer did not listen within 30 s: {self.log()}")

    def url(self, user: str = "postgres", db: str = "postgres") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{db}"

    def log(self) -> str:
        path = self.root / "pgbouncer.log"
        return path.read_text()[-3000:] if path.exists() else ""

    def log_lines(self, text: str) -> list[str]:
        """The lines of the whole log that contain ``text``."""
        path = self.root / "pgbouncer.log"
        lines = path.read_text().splitlines() if path.exists() else []
        return [ln for ln in lines if text in ln]

    def remove(self) -> None:
        import shutil

        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._stderr.close()
        shutil.rmtree(self.root, ignore_errors=True)
