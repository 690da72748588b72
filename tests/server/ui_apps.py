"""The real Agent Inbox and Agent Chat UI (``third_party/``, vendored at pinned commits), built
with npm once per version of their source into a cache outside the repository, and served with
``next start`` on a free 127.0.0.1 port for the browser tests.

The cache is ``$INTERLOCK_UI_CACHE`` or ``~/.cache/interlock-ui``; a build lives in
``<app>-<hash>/``, where the hash covers every vendored file and the Node.js version, so a
changed source or Node builds anew and an unchanged one is reused. A lock file serialises the
builds of pytest-xdist workers (and of concurrent test runs). Without node/npm, or when the
build fails, the tests fail under ``CI=true`` and skip elsewhere, with npm's last lines.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser

from conftest import unavailable

from .live import ServeProcess, chromium, langgraph_serve

THIRD_PARTY = Path(__file__).resolve().parents[2] / "third_party"
BUILD_TIMEOUT = 1500.0
"""Seconds for ``npm ci`` and the build together (about 6 minutes each on 2 cores)."""
LOCK_TIMEOUT = BUILD_TIMEOUT + 60.0
TEST_TIMEOUT = LOCK_TIMEOUT + 300.0
"""pytest-timeout's limit for each test of an app: the first one's setup may wait for a build
(the suite's 300 s would cut a build on a busy machine short and fail the module)."""
START_TIMEOUT = 60.0
NODE_MINIMUM = (20, 9)
UPSTREAM_LOCKS = {"yarn.lock", "pnpm-lock.yaml"}
"""Kept in third_party/ as published, left out of the build: npm installs from package-lock.json
(and would rewrite a yarn.lock it finds)."""
NPM_ENV = {
    "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",  # Agent Chat UI depends on @playwright/test
    "PUPPETEER_SKIP_DOWNLOAD": "1",
    "NEXT_TELEMETRY_DISABLED": "1",
    "npm_config_audit": "false",
    "npm_config_fund": "false",
    "npm_config_update_notifier": "false",
}
BUILD_COMMANDS: dict[str, Sequence[Sequence[str]]] = {
    "agent-inbox": (("npm", "ci"), ("node", "node_modules/next/dist/bin/next", "build")),
    # next 15 lints while building unless told not to; the lint is upstream's CI's business
    "agent-chat-ui": (("npm", "ci"),
                      ("node", "node_modules/next/dist/bin/next", "build", "--no-lint")),
}


def cache_root() -> Path:
    return Path(os.environ.get("INTERLOCK_UI_CACHE") or Path.home() / ".cache" / "interlock-ui")


def _tools() -> str:
    """``node --version``; node and npm must both be there."""
    missing = [t for t in ("node", "npm") if shutil.which(t) is None]
    if missing:
        unavailable("The Agent Inbox and Agent Chat UI tests",
                    f"{' and '.join(missing)} not found: install Node.js 20.9 or later with npm "
                    "(Debian 12's nodejs is 18: use NodeSource's or nodejs.org's packages)")
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True,
                             timeout=30).stdout.strip()
    major, minor = (int(x) for x in version.lstrip("v").split(".")[:2])
    if (major, minor) < NODE_MINIMUM:
        unavailable("The Agent Inbox and Agent Chat UI tests",
                    f"node is {version}; Next.js 16 (Agent Inbox) needs Node.js "
                    f"{NODE_MINIMUM[0]}.{NODE_MINIMUM[1]} or later")
    return version


def _sources(app: str) -> list[Path]:
    root = THIRD_PARTY / app
    if not (root / "package-lock.json").is_file():
        raise FileNotFoundError(f"{root} has no package-lock.json: the vendored app is "
                                "incomplete (see third_party/README.md)")
    return sorted(p for p in root.rglob("*")
                  if p.is_file() and p.relative_to(root).parts[0] not in (".next", "node_modules")
                  and p.name not in UPSTREAM_LOCKS)


def source_key(app: str, node_version: str) -> str:
    digest = hashlib.sha256(node_version.encode())
    root = THIRD_PARTY / app
    for path in _sources(app):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return f"{app}-{digest.hexdigest()[:16]}"


@contextlib.contextmanager
def _locked(path: Path, timeout: float) -> Iterator[None]:
    with open(path, "a") as f:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{path} stayed locked for {timeout:.0f} s: another "
                                       "build of this app did not finish") from None
                time.sleep(1)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _run_build(app: str, target: Path) -> float:
    """Copy the app's source to ``target`` and build it there; the seconds it took."""
    root = THIRD_PARTY / app
    for path in _sources(app):
        dest = target / path.relative_to(root)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)
    log = target / "build.log"
    env = {**os.environ, **NPM_ENV}
    env.pop("NODE_OPTIONS", None)
    started = time.monotonic()
    with open(log, "w") as out:
        for command in BUILD_COMMANDS[app]:
            left = BUILD_TIMEOUT - (time.monotonic() - started)
            out.write(f"$ {' '.join(command)}\n")
            out.flush()
            step = time.monotonic()
            try:
                done = subprocess.run(command, cwd=target, env=env, stdout=out,
                                      stderr=subprocess.STDOUT, timeout=max(left, 1),
                                      start_new_session=True)
            except subprocess.TimeoutExpired:
                raise BuildFailed(app, log, f"`{' '.join(command)}` did not finish within the "
                                  f"{BUILD_TIMEOUT:.0f} s the build may take") from None
            out.write(f"[{' '.join(command)}: exit {done.returncode} after "
                      f"{time.monotonic() - step:.0f} s]\n")
            out.flush()
            if done.returncode:
                raise BuildFailed(app, log, f"`{' '.join(command)}` exited with "
                                  f"{done.returncode}")
    return time.monotonic() - started


class BuildFailed(Exception):
    def __init__(self, app: str, log: Path, what: str) -> None:
        lines = log.read_text(errors="replace").splitlines() if log.exists() else []
        # npm states the cause first and may follow it with a page of usage text
        first = [ln for ln in lines[:-40]
                 if "error" in ln.lower() and ln.strip() not in ("npm error", "npm ERR!")]
        cause = "\n".join(first[:8]) + "\n...\n" if first else ""
        tail = "\n".join(lines[-40:])
        super().__init__(f"building {app} failed: {what}. The first errors and the last lines "
                         f"of {log}:\n{cause}{tail}")


def built_app(app: str) -> Path:
    """The directory of a finished build of ``third_party/<app>``, building it first when the
    cache has none for this source."""
    key = source_key(app, _tools())
    root = cache_root()
    target = root / key
    done = target / ".interlock-built"
    if done.exists():
        return target
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f"{key}.lock", LOCK_TIMEOUT):
        if done.exists():  # another worker built it while this one waited
            return target
        shutil.rmtree(target, ignore_errors=True)  # what a failed or killed build left
        target.mkdir()
        try:
            seconds = _run_build(app, target)
        except BuildFailed as e:
            unavailable(f"The {app} tests", str(e))
        done.write_text(f"{seconds:.0f} s\n")
    return target


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class NextApp:
    """``next start`` of a built app on 127.0.0.1, until ``stop``."""

    def __init__(self, app: str) -> None:
        self.directory = built_app(app)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            ["node", "node_modules/next/dist/bin/next", "start", "-H", "127.0.0.1",
             "-p", str(self.port)],
            cwd=self.directory, env={**os.environ, **NPM_ENV}, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url, timeout=5).status_code == 200:
                    return
            time.sleep(0.3)
        self.stop()
        raise AssertionError(f"{app} did not start at {self.url}:\n{''.join(self.lines)}")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)


# Fixtures of the test modules of an app, which name it in ``APP`` (used by name: import them
# and list them in ``__all__``)


@pytest.fixture(scope="module")
def ui_app(request: pytest.FixtureRequest) -> Iterator[NextApp]:
    """The module's ``APP`` built (or taken from the cache) and served."""
    served = NextApp(request.module.APP)
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="module")
def server(ui_app: NextApp, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[ServeProcess, Path]]:
    """``interlock serve --langgraph-api`` of the server tests' agent on SQLite, letting the
    app's pages call it; the process and its execution log."""
    with langgraph_serve(tmp_path_factory.mktemp("ui_app_server"),
                         "--langgraph-allow-origin", ui_app.url) as served:
        yield served


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as b:
        yield b
