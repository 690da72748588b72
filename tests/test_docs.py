"""Every Python block and shell command in README.md and docs/*.md runs; none is skipped.

A block runs as a reader runs it: what it needs is made by blocks the reader sees above it on
the same page (a set-up block: an agent module, a tokens file, a key in the environment, a
server or webhook receiver left running in a second terminal). Marker comments right above a
fence (HTML comments, invisible on the rendered page) say which::

    <!-- docs-test: defines NAME -->            this block is the page's set-up NAME; it also
                                                runs on its own
    <!-- docs-test: prelude NAME -->            run first the set-up NAME: a block above that
                                                defines it, as a reader runs it (same
                                                directory and shell: its exported variables
                                                carry over; a Python set-up of a Python block
                                                is run as one script with it; a set-up marked
                                                `background` keeps running, each command in a
                                                process of its own, until the block is done,
                                                then gets Ctrl-C), or SETUPS[NAME] (below)
    <!-- docs-test: replace OLD ==> NEW -->     fill a placeholder ({root}, {tmp}, {port} and
                                                {NAME-port}: free ports, {pg}, {openai-url},
                                                ...; NEW may be empty)
    <!-- docs-test: background PATTERN -->      every command is a server; it must print
                                                PATTERN (and the block's `expect`s hold), then
                                                it is stopped with Ctrl-C
    <!-- docs-test: expect WHERE PATTERN -->    afterwards the output of WHERE matches:
                                                `output` is the block's own, otherwise the
                                                named background set-up's (what the reader
                                                sees in the second terminal)
    <!-- docs-test: check NAME -->              CHECKS[NAME]: what the block must have done,
                                                looked at afterwards (nothing is done for it)
    <!-- docs-test: pty KEYS -->                shell: every command runs in a terminal and
                                                gets KEYS (what the reader types)
    <!-- docs-test: container TEST... -->       shell: the commands that start with `docker` or
                                                `curl` address containers, which cannot run
                                                here: they are not run, the named tests (which
                                                must exist) run instead and must pass; every
                                                other command runs as written
    <!-- docs-test: note TEXT -->               what stands in for an outside service, or what
                                                is not run (required with `container` and with
                                                the setups in STAND_INS)

Python blocks run in a fresh directory in a new interpreter; shell blocks with ``bash -e`` in a
fresh directory.

What this test still does that the pages do not show, and why:

- The install. ``interlock`` and ``python`` of this environment are on the PATH and ``src``
  on PYTHONPATH, in place of the README's ``pip install -e '.[extra]'`` into the reader's
  ``.venv`` (minutes per block); HOME is a fresh directory (a new user: the demo's data and the
  audit key go there); pip's download cache and no byte-compiling only save time.
- ``prelude checkout``: the block runs in a fresh ``git clone`` of this repository's committed
  state, where the reader is in the clone the README's first block makes (from GitHub, which is
  not reachable here). ``prelude this-checkout``: in this repository, with this environment's
  ``python -m pytest`` in place of ``.venv/bin/pytest`` (``scripts/test.sh`` makes that one).
  ``prelude venv``: a fresh virtual environment, active, standing for the README Install
  block's ``.venv`` without its installs (minutes).
- ``prelude local-models``: OpenAI- and Anthropic-compatible servers on 127.0.0.1 answer in
  place of the providers and of Ollama (the network is closed; no keys); OPENAI_BASE_URL and
  ANTHROPIC_BASE_URL point at them. The pages say what the reader provides instead: an API key
  in place of ``...``, Ollama running.
- ``prelude pg-database``: deploying.md's backup commands run ``pg_dump``/``pg_restore`` here
  against a database of the test Postgres holding a paused thread, in place of ``docker compose
  exec db ...`` (Docker cannot run here); ``container`` blocks: the named tests run in place
  of the ``docker``/``curl`` lines.
- ``replace``: free ports in place of 8000/9000 (tests run side by side), ``--no-browser``,
  the test Postgres in place of an example host, {event}: the id a reader copies from
  ``interlock outbox --status dead`` (``check dead-event-retried`` reads it from the outbox),
  smaller sizes for the benchmark's scripts and a limited pytest run where the whole suite
  would run (each such block's ``note`` says so).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
# pages whose blocks a test of their own runs (with the setup they need)
OWN_RUNNER = {"from-langchain.md": ROOT / "tests" / "interop" / "test_from_langchain_doc.py"}
DOCS = [ROOT / "README.md",
        *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in OWN_RUNNER)]
FENCE = re.compile(r"((?:[ \t]*<!-- docs-test: [^\n]*-->\n)*)[ \t]*```(python|bash)\n(.*?)```",
                   re.S)
MARKER = re.compile(r"<!-- docs-test: (\w[\w-]*) ?(.*?) -->")


@dataclass
class Block:
    path: Path
    line: int
    lang: str
    code: str
    markers: list[tuple[str, str]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    def marker(self, key: str) -> list[str]:
        return [v for k, v in self.markers if k == key]


def blocks() -> list[Block]:
    out = []
    for path in DOCS:
        text = path.read_text()
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start(2)) + 1
            markers = [(k, v.strip()) for k, v in MARKER.findall(m.group(1))]
            out.append(Block(path, line, m.group(2), m.group(3), markers))
    return out


ALL = blocks()

def defined(block: Block) -> dict[str, Block]:
    """The set-up blocks (``defines NAME``) above ``block`` on its page: what its ``prelude``
    markers name, shown to the reader, not hidden in this test."""
    return {name: b for b in ALL if b.path == block.path and b.line < block.line
            for name in b.marker("defines")}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Ctx:
    tmp: Path
    block: Block
    values: dict[str, str] = field(default_factory=dict)
    cleanups: list[Callable[[], None]] = field(default_factory=list)
    checks: list[Callable[[], None]] = field(default_factory=list)
    """What the block must have done, checked after it ran."""
    ready: Callable[[], bool] | None = None
    """background: a condition that must also hold before the server is stopped."""
    servers: dict[str, list[Server]] = field(default_factory=dict)
    """The page's set-up blocks that keep running (``background``) by name: their output."""


PLACEHOLDER = re.compile(r"\{(pg|pg-dsn|pg-schema|pg-db|[\w-]*port|openai-url|anthropic-url|"
                         r"event)\}")
PORT = re.compile(r"\{((?:[\w-]+-)?port)\}")


def fill(text: str, ctx: Ctx) -> str:
    """Placeholders filled: {port} and {NAME-port} are free ports, the same in every block of
    one test (a page's server and the block that talks to it)."""
    for name in PORT.findall(text):
        ctx.values.setdefault(name, str(_free_port()))
    values = {"root": str(ROOT), "tmp": str(ctx.tmp), "python": sys.executable, **ctx.values}
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    assert not PLACEHOLDER.search(text), f"unfilled: {text}"
    return text


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INTERLOCK_", "OPENAI_",
                                                                      "ANTHROPIC_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = str(ROOT / "src")
    env["HOME"] = str(tmp / "home")  # the demo's default data directory goes here
    env["PIP_NO_COMPILE"] = "1"  # installs as written, without byte-compiling (time)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # downloads are kept where they usually are, not in the fresh HOME (time)
    env["PIP_CACHE_DIR"] = os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip")
    (tmp / "home").mkdir(exist_ok=True)
    return env


def source(block: Block, ctx: Ctx) -> str:
    code = block.code
    for item in block.marker("replace"):
        old, sep, new = item.partition(" ==>")
        assert sep, f"{block.id}: replace needs 'OLD ==> NEW'"
        assert old in code, f"{block.id}: {old!r} is not in the block"
        code = code.replace(old, fill(new.removeprefix(" "), ctx))
    return code


# -- setups: what still stands in for the reader (see the module's docstring) --------------------


def setup_checkout(ctx: Ctx, env: dict[str, str]) -> None:
    """A clone of this repository (its committed state) as the working directory; nothing of
    this environment on the import path."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(ctx.tmp / "checkout")], check=True,
                   timeout=120)
    ctx.values["cwd"] = str(ctx.tmp / "checkout")
    env.pop("PYTHONPATH", None)


def setup_this_checkout(ctx: Ctx, env: dict[str, str]) -> None:
    """This repository itself as the working directory (its test suite, this environment)."""
    ctx.values["cwd"] = str(ROOT)


def setup_venv(ctx: Ctx, env: dict[str, str]) -> None:
    """A fresh virtual environment, active (first on the PATH): installs go there."""
    venv = ctx.tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    env["VIRTUAL_ENV"] = str(venv)
    env.pop("PYTHONPATH", None)


def _agent_like(server: Any) -> Callable[[dict[str, Any]], Any]:
    """Replies of a model that calls execute_sql (or the first tool offered) for a user's
    message and answers after the tool's result."""
    from models.fake_servers import Call, text, tools

    ids = itertools.count(1)

    def reply(body: dict[str, Any]) -> Any:
        offered = [t.get("function", t).get("name") for t in body.get("tools") or []]
        last = body["messages"][-1]
        content = last.get("content")
        after_tool = last["role"] == "tool" or (isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content))
        if after_tool or not offered:
            return text("Done.")
        name = "execute_sql" if "execute_sql" in offered else offered[0]
        args = {"query": "DELETE FROM orders WHERE status = 'refunded'"} \
            if name == "execute_sql" else {}
        return tools(Call(f"call_{next(ids)}", name, args))

    return reply


def setup_local_models(ctx: Ctx, env: dict[str, str]) -> None:
    """OpenAI- and Anthropic-compatible servers on 127.0.0.1 in place of the providers
    (tests/models/fake_servers.py: the wire protocols, each request checked as the provider
    checks it); OPENAI_BASE_URL and ANTHROPIC_BASE_URL point at them, {openai-url} is the
    first. Each provider the block names must have been sent valid requests."""
    from models.fake_servers import FakeAnthropic, FakeOpenAI

    servers = {"openai": FakeOpenAI(), "anthropic": FakeAnthropic()}
    for server in servers.values():
        server.responder = _agent_like(server)
        server.start()
        ctx.cleanups.append(server.stop)
    env["OPENAI_BASE_URL"] = ctx.values["openai-url"] = servers["openai"].url
    env["ANTHROPIC_BASE_URL"] = ctx.values["anthropic-url"] = servers["anthropic"].url

    def check() -> None:
        for name, server in servers.items():
            assert server.problems == [], (name, server.problems)
            if name in ctx.block.code.lower() and not ctx.block.marker("defines"):
                assert server.requests, f"no request reached the local {name} server"

    ctx.checks.append(check)


def setup_pg_database(ctx: Ctx, env: dict[str, str]) -> None:
    """A database of its own on the test Postgres ({pg-db}, dropped afterwards) holding thread
    t-42 that waits for a review; afterwards it must still wait, unchanged."""
    import uuid

    import psycopg

    from conftest import require_postgres

    dsn = require_postgres()
    name = f"docs_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    ctx.cleanups.append(drop)
    url = urlsplit(dsn)._replace(path=f"/{name}").geturl()
    ctx.values["pg-db"] = url
    snapshot = textwrap.dedent(f"""
        import json
        from interlock import Agent, HumanInTheLoop, PostgresCheckpointer, ScriptedModel, tool

        @tool
        def execute_sql(query: str) -> str:
            '''Run a SQL statement against the orders database.'''
            return f"ran {{query}}"

        agent = Agent(model=ScriptedModel([{{"name": "execute_sql",
                                            "args": {{"query": "DELETE FROM records"}}}}]),
                      tools=[execute_sql],
                      middleware=[HumanInTheLoop(interrupt_on={{"execute_sql": True}})],
                      checkpointer=PostgresCheckpointer({url!r}))
        try:
            if not agent.list_threads():
                agent.invoke("clean up", thread_id="t-42")
            t = agent.get_thread("t-42")
            print(json.dumps([t.status, t.version, [i.id for i in t.interrupts],
                              len(t.messages)]))
        finally:
            agent.close()
    """)

    def state() -> Any:
        done = subprocess.run([sys.executable, "-c", snapshot], env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    before = state()
    assert before[0] == "interrupted", before
    ctx.checks.append(lambda: (after := state()) == before or pytest.fail(f"{before} {after}"))


SETUPS: dict[str, Callable[[Ctx, dict[str, str]], None]] = {
    "checkout": setup_checkout, "this-checkout": setup_this_checkout, "venv": setup_venv,
    "local-models": setup_local_models, "pg-database": setup_pg_database,
}
# setups that stand in for something outside (a provider, a container's database): a block
# using one says in a `note` marker what runs instead
STAND_INS = {"local-models", "pg-database"}


# -- checks: what a block must have done, looked at afterwards (nothing done for the reader) -----


def _outbox(db: Path) -> list[Any]:
    from interlock import SqliteCheckpointer

    async def go() -> list[Any]:
        store = SqliteCheckpointer(db)
        try:
            return list(await store.outbox_list())
        finally:
            await store.close()

    return asyncio.run(go())


def check_dead_event_retried(ctx: Ctx, env: dict[str, str]) -> None:
    """{event} is the id the reader copies from `interlock outbox --status dead` (the newest
    event, read from the outbox before the block); afterwards it must be pending again, the
    other events still dead."""
    events = _outbox(ctx.tmp / "interlock.db")
    assert events, f"{ctx.block.id}: the page's set-up raised no request"
    newest = max(events, key=lambda e: e.created_at)
    ctx.values["event"] = newest.id

    def check() -> None:
        now = {e.id: e.status for e in _outbox(ctx.tmp / "interlock.db")}
        assert now.pop(newest.id) == "pending", now  # went dead, then retried
        assert set(now.values()) <= {"dead"}, now

    ctx.checks.append(check)


def check_langgraph_decided(ctx: Ctx, env: dict[str, str]) -> None:
    """The client's thread must have finished with the first call run and the second
    rejected (asked of the page's server, on {port}, with the page's $TOKEN)."""
    import httpx

    def check() -> None:
        url, auth = fill("http://127.0.0.1:{port}", ctx), {
            "Authorization": f"Bearer {env['TOKEN']}"}
        [t] = httpx.get(f"{url}/api/threads", headers=auth, timeout=10).json()["threads"]
        detail = httpx.get(f"{url}/api/threads/{t['thread_id']}", headers=auth,
                           timeout=10).json()
        assert detail["status"] == "completed", detail
        results = [m["content"] for m in detail["messages"] if m["role"] == "tool"]
        assert results[0] == "ran DELETE FROM orders WHERE status = 'refunded'", results
        assert "not on Fridays" in results[1], results

    ctx.checks.append(check)


CHECKS: dict[str, Callable[[Ctx, dict[str, str]], None]] = {
    "dead-event-retried": check_dead_event_retried, "langgraph-decided": check_langgraph_decided,
}
MARKERS = {"prelude", "replace", "background", "pty", "container", "note", "defines",
           "check", "expect"}


# -- running -------------------------------------------------------------------------------------


def run_python(block: Block, ctx: Ctx, env: dict[str, str]) -> str:
    tmp = ctx.tmp
    code = "\n".join(b.code for b in python_setups(block)) + source(block, ctx)
    script = tmp / "block.py"
    script.write_text(code)
    [background] = block.marker("background") or [None]
    if background is not None:
        return run_background(f"{shlex.quote(sys.executable)} {script}", background, tmp, env,
                              ctx.ready)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{block.id}:\n{code}\n---\n{done.stderr[-4000:]}"
    return done.stdout


def python_setups(block: Block) -> list[Block]:
    """The set-up blocks run as one script with ``block`` (Python set-ups of a Python block)."""
    setups = defined(block)
    return [setups[name] for name in block.marker("prelude") if name in setups
            and block.lang == setups[name].lang == "python"
            and not setups[name].marker("background")]


def run_setup(setup: Block, ctx: Ctx, env: dict[str, str]) -> None:
    """A set-up block of the page run before the block, as a reader runs it: in the same
    directory, and a shell's exported variables carry over (the reader's terminal)."""
    cwd = Path(ctx.values.get("cwd", ctx.tmp))
    if setup.lang == "python":
        script = ctx.tmp / f"setup-{setup.line}.py"
        script.write_text(source(setup, ctx))
        command = [sys.executable, str(script)]
    else:
        after = ctx.tmp / f"setup-{setup.line}.env"
        command = ["bash", "-e", "-o", "pipefail", "-c",
                   f"{source(setup, ctx)}\nenv -0 > {shlex.quote(str(after))}"]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, f"{setup.id} (set-up of {ctx.block.id}):\n{done.stderr[-4000:]}"
    if setup.lang == "bash":
        for item in after.read_text().split("\0"):
            name, sep, value = item.partition("=")
            if sep and name not in ("_", "SHLVL", "PWD", "OLDPWD"):
                env[name] = value


def commands(code: str) -> list[str]:
    """The block's commands (continuation lines joined, comments and blank lines dropped)."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [ln for ln in (line.strip() for line in joined.splitlines())
            if ln and not ln.startswith("#")]


@dataclass
class Server:
    """A command that keeps running (a server, the reader's second terminal): its output so far
    is in ``seen``."""

    proc: subprocess.Popen[str]
    seen: list[str]

    @classmethod
    def start(cls, command: str, cwd: Path, env: dict[str, str]) -> Server:
        proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        seen: list[str] = []

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                seen.append(line)

        threading.Thread(target=pump, daemon=True).start()
        return cls(proc, seen)

    @property
    def output(self) -> str:
        return "".join(self.seen)

    def wait_for(self, command: str, pattern: str,
                 ready: Callable[[], bool] | None = None) -> None:
        """Until the output matches ``pattern`` and ``ready()`` holds; fails if it exits
        before."""
        give_up = time.monotonic() + 240

        def done() -> bool:
            return bool(re.search(pattern, self.output, re.M)) and (ready is None or ready())

        while not done():
            if self.proc.poll() is not None:
                time.sleep(0.5)  # the rest of its output
                if done():
                    return
                pytest.fail(f"{command!r} exited ({self.proc.returncode}) before {pattern!r}:"
                            f"\n{self.output}")
            assert time.monotonic() < give_up, f"{command!r}: no {pattern!r} in:\n{self.output}"
            time.sleep(0.1)

    def stop(self) -> None:
        """Ctrl-C, as the reader stops it."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def run_background(command: str, pattern: str, cwd: Path, env: dict[str, str],
                   ready: Callable[[], bool] | None = None) -> str:
    server = Server.start(command, cwd, env)
    try:
        server.wait_for(command, pattern, ready)
    finally:
        server.stop()
    return server.output


def run_pty(command: str, keys: str, cwd: Path, env: dict[str, str]) -> None:
    import pexpect
    child = pexpect.spawn("bash", ["-c", command], cwd=str(cwd), env=env, encoding="utf-8",
                          timeout=60, dimensions=(50, 120))
    try:
        for key in keys:  # a session with nothing to decide ends without asking
            if child.expect(["> ", pexpect.EOF]) == 1:
                break
            child.send(key)
        else:
            child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, f"{command!r}:\n{child.before}"


CONTAINER_COMMAND = ("docker ", "curl ")


def run_named_tests(block: Block, nodes: list[str]) -> None:
    """The tests that stand in for a block's container commands: each exists, and passes
    (not skipped) when run here."""
    assert nodes, f"{block.id}: name the tests that cover the container commands"
    for node in nodes:
        path, sep, name = node.partition("::")
        assert sep and (ROOT / path).is_file(), f"{block.id}: no test file for {node}"
        assert re.search(rf"^def {re.escape(name)}\(", (ROOT / path).read_text(), re.M), \
            f"{block.id}: {node} does not exist"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
                           *nodes], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:]
    for node in nodes:
        assert f"PASSED {node}" in done.stdout, f"{node} did not pass:\n{done.stdout[-3000:]}"


def run_bash(block: Block, ctx: Ctx, env: dict[str, str]) -> str:
    """Runs the block; its output."""
    cwd = Path(ctx.values.get("cwd", ctx.tmp))
    code = source(block, ctx)
    [background] = block.marker("background") or [None]
    [keys] = block.marker("pty") or [None]
    [container] = block.marker("container") or [None]
    if container is not None:
        # the commands addressed to containers are run by the named tests instead
        code = "\n".join(c for c in commands(code) if not c.startswith(CONTAINER_COMMAND))
    if background is None and keys is None:
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", code], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"{block.id}:\n{code}\n---\n{done.stdout[-2000:]}\n" \
                                     f"{done.stderr[-4000:]}"
        output = done.stdout
    else:
        output = ""
        for command in commands(code):
            if command.startswith("export "):
                name, _, value = command.removeprefix("export ").partition("=")
                env[name] = value
            elif background is not None:
                output += run_background(command, background, cwd, env, ctx.ready)
            else:
                run_pty(command, keys or "", cwd, env)
    if container is not None:
        run_named_tests(block, container.split())
    return output


def start_setup(name: str, setup: Block, ctx: Ctx, env: dict[str, str]) -> None:
    """A set-up block that is a server (``background``), started as the reader starts it in a
    second terminal: each command keeps running until the block is done (then Ctrl-C)."""
    cwd = Path(ctx.values.get("cwd", ctx.tmp))
    [pattern] = setup.marker("background")
    if setup.lang == "python":
        script = ctx.tmp / f"setup-{setup.line}.py"
        script.write_text(source(setup, ctx))
        started = [f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"]
    else:
        started = commands(source(setup, ctx))
    for command in started:
        server = Server.start(command, cwd, dict(env))
        ctx.cleanups.append(server.stop)
        ctx.servers.setdefault(name, []).append(server)
        server.wait_for(f"{setup.id} (set-up of {ctx.block.id}): {command}", pattern)


def expectations(ctx: Ctx) -> tuple[Callable[[], bool], Callable[[str], None]]:
    """The block's ``expect WHERE PATTERN`` markers: whether the set-up servers' output
    already matches (a background block runs until it does), and the check of everything
    afterwards (``output``: the block's own)."""
    wanted = [item.partition(" ") for item in ctx.block.marker("expect")]

    def seen(where: str) -> str:
        return "".join(s.output for s in ctx.servers[where])

    def ready() -> bool:
        return all(re.search(p, seen(w), re.M) for w, _, p in wanted if w != "output")

    def check(output: str) -> None:
        give_up = time.monotonic() + 30  # what a server prints may come a moment later
        while not ready() and time.monotonic() < give_up:
            time.sleep(0.1)
        for where, _, pattern in wanted:
            text = output if where == "output" else seen(where)
            assert re.search(pattern, text, re.M), \
                f"{ctx.block.id}: no {pattern!r} in the output of {where}:\n{text[-3000:]}"

    return ready, check


# blocks that take long: installs into fresh environments, clones, servers, nested test runs
SLOW_SETUPS = {"checkout", "venv", "this-checkout"}


def _param(block: Block) -> object:
    servers = [b for b in defined(block).values() if b.marker("background")]
    slow = SLOW_SETUPS & set(block.marker("prelude")) or block.marker("background") \
        or block.marker("container") or any(set(b.marker("defines")) & set(block.marker(
            "prelude")) for b in servers)
    # installs, the benchmark and nested test runs take minutes on a loaded machine
    marks = [pytest.mark.slow, pytest.mark.first, pytest.mark.timeout(1800)] if slow else []
    if any("{pg" in v for _, v in block.markers):
        marks.append(pytest.mark.postgres)
    return pytest.param(block, id=block.id, marks=marks)


@pytest.mark.parametrize("block", [_param(b) for b in ALL])
def test_doc_block_runs(block: Block, tmp_path: Path) -> None:
    ctx = Ctx(tmp_path, block)
    if any("{pg" in v and "{pg-db}" not in v for _, v in block.markers):
        ctx.values.update(pg_schema(ctx))
    try:
        env = _env(tmp_path)
        setups, together = defined(block), python_setups(block)
        for name in block.marker("prelude"):  # in the order the markers name them
            if name in SETUPS:
                SETUPS[name](ctx, env)
            elif setups[name].marker("background"):
                start_setup(name, setups[name], ctx, env)
            elif setups[name] not in together:
                run_setup(setups[name], ctx, env)
        for name in block.marker("check"):
            CHECKS[name](ctx, env)
        ready, check_output = expectations(ctx)
        if block.marker("expect"):
            ctx.ready = ready
        output = (run_python if block.lang == "python" else run_bash)(block, ctx, env)
        check_output(output)
        for check in ctx.checks:
            check()
    finally:
        for cleanup in reversed(ctx.cleanups):
            cleanup()


def pg_schema(ctx: Ctx) -> dict[str, str]:
    """A schema of its own on the test Postgres, dropped afterwards."""
    import uuid

    from conftest import require_postgres

    dsn = require_postgres()
    schema = f"docs_{uuid.uuid4().hex[:12]}"

    def drop() -> None:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

    ctx.cleanups.append(drop)
    return {"pg": f"{dsn}?options=-csearch_path%3D{schema}", "pg-dsn": dsn,
            "pg-schema": schema}


def test_pages_with_their_own_runner_have_it() -> None:
    for page, runner in OWN_RUNNER.items():
        assert (ROOT / "docs" / page).is_file() and runner.is_file()
        assert page in runner.read_text()


def test_every_block_runs_and_says_what_stands_in_for_outside_services() -> None:
    assert len(ALL) >= 30  # the parser found the blocks
    for b in ALL:
        kinds = {k for k, _ in b.markers}
        assert kinds <= MARKERS, f"{b.id}: unknown marker {kinds - MARKERS} (none skips a block)"
        for name in b.marker("prelude"):
            # set-up is a block the reader sees, above on the same page
            assert (name in SETUPS) != (name in defined(b)), \
                f"{b.id}: {name!r} is not exactly one of a setup and a block above that " \
                f"defines it"
        if kinds & {"container"} or STAND_INS & set(b.marker("prelude")):
            [note] = b.marker("note") or [""]
            assert len(note) > 40, f"{b.id}: say in a note what runs in place of what"
        if "container" in kinds:
            assert b.lang == "bash"
            assert any(c.startswith(CONTAINER_COMMAND) for c in commands(b.code))
        assert set(b.marker("check")) <= set(CHECKS), f"{b.id}: unknown check"
        servers = {n for n, s in defined(b).items() if s.marker("background")}
        for item in b.marker("expect"):
            where, _, pattern = item.partition(" ")
            assert pattern and (where == "output" or where in servers & set(b.marker(
                "prelude"))), f"{b.id}: expect OUTPUT PATTERN: 'output' or a server it starts"


# what a reader has to make before a block can run: a block that uses one names the page's
# visible set-up block that makes it
MADE_BY_SET_UP = {"myapp": re.compile(r"\bmyapp\.agents\b"),
                  "tokens": re.compile(r"\$TOKEN\b|\[\"TOKEN\"\]|(?<![/\w])tokens\.toml")}
# ... unless the block makes it itself
MAKES = {"myapp": re.compile(r"^cat > myapp/agents\.py", re.M),
         "tokens": re.compile(r"^export TOKEN=", re.M)}


def test_what_a_block_needs_is_made_by_a_block_the_reader_sees_above_it() -> None:
    for b in ALL:
        for name, uses in MADE_BY_SET_UP.items():
            if uses.search(b.code) and not MAKES[name].search(b.code):
                assert name in b.marker("prelude") and name in defined(b), \
                    f"{b.id}: uses {name}; show the set-up that makes it in a block above " \
                    f"('defines {name}') and name it ('prelude {name}')"
        assert not set(b.marker("prelude")) & {"myapp", "tokens"} & set(SETUPS)
    # names a Python block uses that neither it nor its set-up blocks define
    for b in ALL:
        if b.lang != "python":
            continue
        code = "\n".join(s.code for s in python_setups(b)) + b.code
        done = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--select",
                               "F821", "--output-format", "concise", "-"], input=code,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"{b.id}: {done.stdout}"


def test_readme_example_runs_twice_in_a_fresh_directory(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    [example] = [b for b in ALL if b.path.name == "README.md" and b.lang == "python"]
    assert example.code in readme
    script = tmp_path / "readme_example.py"
    script.write_text(example.code)
    outputs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path,
                              env=_env(tmp_path), capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    for out in outputs:
        assert "execute_sql" in out and out.strip().endswith("Old records deleted.")
    from interlock import SqliteCheckpointer
    from interlock.agent import Agent
    from interlock.models.scripted import ScriptedModel

    agent = Agent(model=ScriptedModel([]), checkpointer=SqliteCheckpointer(
        tmp_path / "interlock.db"))
    try:
        threads = agent.list_threads()
        assert len(threads) == 2 and {t.status for t in threads} == {"completed"}
    finally:
        agent.close()


def test_quickstart_pauses_in_one_process_and_finishes_in_the_next(tmp_path: Path) -> None:
    work = tmp_path / "qs"
    env = {**_env(tmp_path), "INTERLOCK_QUICKSTART_DIR": str(work)}
    first = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")],
                           env=env, capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
    assert first.returncode == 0, first.stderr
    assert ("PAUSED: the agent wants to call execute_sql(query=\"DELETE FROM records WHERE "
            "created_at < '2025-01-01'\")") in first.stdout
    assert "(status: interrupted)" in first.stdout and "Run this script again" in first.stdout
    assert (work / "quickstart.db").exists()
    second = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")],
                            env=env, capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL)
    assert second.returncode == 0, second.stderr
    out = second.stdout
    assert "Found the paused run 'quickstart' (status: interrupted): execute_sql(query=" in out
    assert "tool result: 2 rows affected" in out
    assert "Done: the old records are deleted." in out
    assert "records left: 1" in out and "audit chain intact: True" in out
    assert not work.exists()  # cleaned up


def test_quickstart_run_again_after_a_second_run_stopped_past_its_decision(
        tmp_path: Path) -> None:
    """The second run was stopped (Ctrl-C, a crash) after the approval was stored, before it
    cleaned up: running the script again finishes the run (the call does not run again)
    rather than failing on a request that is no longer pending."""
    work = tmp_path / "qs"
    env = {**_env(tmp_path), "INTERLOCK_QUICKSTART_DIR": str(work)}
    script = str(ROOT / "examples" / "quickstart.py")
    first = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL)
    assert first.returncode == 0, first.stderr
    source = (ROOT / "examples" / "quickstart.py").read_text()
    stopped = subprocess.run(  # the second run, stopped before it counts and cleans up
        [sys.executable, "-c", source.split("remaining = orders.execute")[0]],
        env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert stopped.returncode == 0, stopped.stderr
    assert "tool result: 2 rows affected" in stopped.stdout
    again = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL)
    assert again.returncode == 0, again.stderr
    assert "already decided (status: completed)" in again.stdout
    assert "records left: 1" in again.stdout and "audit chain intact: True" in again.stdout
    assert not work.exists()


def test_quickstart_keeps_its_files_in_the_users_home(tmp_path: Path) -> None:
    """Not in a directory every user of the machine shares: one user's first run must not
    find (and finish, and delete) another user's paused run."""
    homes = [tmp_path / "ann", tmp_path / "bob"]
    for home in homes:
        home.mkdir()
        env = {**_env(tmp_path), "HOME": str(home)}
        env.pop("INTERLOCK_QUICKSTART_DIR", None)
        first = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")],
                               env=env, capture_output=True, text=True, timeout=120,
                               stdin=subprocess.DEVNULL, cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        # each user's first run pauses its own run (none finds the other's)
        assert "PAUSED: the agent wants to call execute_sql" in first.stdout
        assert (home / ".interlock" / "quickstart" / "quickstart.db").exists()


def test_demo_banner_hints_match_the_docs_table() -> None:
    from interlock.cli.demo import HINTS

    table = {}
    for line in (ROOT / "docs" / "cli.md").read_text().splitlines():
        m = re.match(r"\| `([\w-]+)` \| .* \| ([^|]+) \|$", line)
        if m and m.group(1) in HINTS:
            table[m.group(1)] = m.group(2).strip()
    assert table == HINTS


@pytest.mark.postgres
def test_durability_lists_the_tables_postgres_creates() -> None:
    """docs/durability.md names every table a PostgresCheckpointer creates in its schema."""
    import uuid

    import psycopg

    from conftest import require_postgres
    from interlock import PostgresCheckpointer

    text = (ROOT / "docs" / "durability.md").read_text()
    bullet = text[text.index("- **Schema and privileges**"):]
    bullet = bullet[:bullet.index("\n- **")]
    named = set(re.findall(r"`(interlock_\w+)`", bullet))
    dsn = require_postgres()
    schema = f"docs_tables_{uuid.uuid4().hex[:8]}"

    async def create() -> None:
        store = PostgresCheckpointer(dsn, schema=schema)
        try:
            await store.list_threads(limit=1)  # the first use creates the tables
        finally:
            await store.close()

    try:
        asyncio.run(create())
        with psycopg.connect(dsn, autocommit=True) as conn:
            rows = conn.execute("SELECT table_name FROM information_schema.tables "
                                "WHERE table_schema = %s", (schema,)).fetchall()
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    assert named == {r[0] for r in rows}


def test_every_install_of_interlock_is_from_the_clone() -> None:
    """interlock is on no package index: the docs (and messages and docstrings) install it in
    the clone with ``pip install -e '.[extra]'``, or from a wheel built there; never ``pip
    install 'interlock[extra]'``, which fails."""
    from_index = re.compile(r"pip install(?:\s+-[-\w=]+)*\s+['\"]?interlock(?![\w/.-])|"
                            r"['\"`]interlock\[")
    not_editable = re.compile(r"pip install(?! -e '\.\[)[^\n`]*(?<![\w/-])\.\[")
    files = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "src").rglob("*.py")]
    for path in files:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            assert not from_index.search(line) and not not_editable.search(line), \
                f"{path.relative_to(ROOT)}:{n}: install from the clone: pip install -e " \
                f"'.[extra]' ({line.strip()})"
    # the form the docs use
    assert not from_index.search("pip install -e '.[server]'")
    assert from_index.search("pip install 'interlock[langchain]'")
    assert from_index.search("pip install -U interlock")
    assert not_editable.search("pip install '.[server]'")


def test_what_still_stands_in_for_the_reader_is_listed_at_the_top() -> None:
    """A setup that does something the page does not show is named, with why, in the list at
    the top of this module."""
    doc = __doc__ or ""
    listed = doc[doc.index("What this test still does"):]
    for name in SETUPS:
        assert f"``prelude {name}``" in listed, f"list the setup {name!r} at the top, with why"
