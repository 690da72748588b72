"""Every Python block and shell command in README.md and docs/*.md runs; none is skipped.

A block that needs something around it says so in marker comments right above its fence (HTML
comments, invisible on the rendered page)::

    <!-- docs-test: prelude NAME -->            run SETUPS[NAME] first (a service, files, a
                                                database, ...); Python: also PRELUDES[NAME]'s
                                                code before the block's
    <!-- docs-test: env NAME=VALUE -->          set an environment variable
    <!-- docs-test: replace OLD ==> NEW -->     fill a placeholder ({root}, {tmp}, {port}, {pg},
                                                {openai-url}, ...; NEW may be empty)
    <!-- docs-test: background PATTERN -->      every command is a server; it must print
                                                PATTERN (and the setup's own condition hold),
                                                then it is stopped with Ctrl-C
    <!-- docs-test: pty KEYS -->                shell: every command runs in a terminal and
                                                gets KEYS (an interactive command)
    <!-- docs-test: container TEST... -->       shell: the commands that start with `docker` or
                                                `curl` address containers, which cannot run
                                                here: they are not run, the named tests (which
                                                must exist) run instead and must pass; every
                                                other command runs as written
    <!-- docs-test: note TEXT -->               what stands in for an outside service, or what
                                                is not run (required with `container` and with
                                                the setups in STAND_INS)

Python blocks run in a fresh directory in a new interpreter; shell blocks with ``bash -e`` in a
fresh directory, ``interlock`` and ``python`` from this environment on the PATH. After a block
the setups' checks run: what the block must have done (a delivery received, a request that
reached the local model server, a restored thread).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import shlex
import shutil
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

PRELUDES = {
    "policy": """
from datetime import timedelta

from interlock import InterruptOn
""",
    # the tool of the README example, for blocks that show one piece of an agent
    "tools": '''
from interlock import tool

@tool
def execute_sql(query: str) -> str:
    """Run a SQL statement against the orders database."""
    return f"ran {query}"
''',
    "agent": '''
from interlock import Agent, HumanInTheLoop, ScriptedModel, SqliteCheckpointer, tool

@tool
def execute_sql(query: str) -> str:
    """Run a SQL statement against the orders database."""
    return f"ran {query}"

agent = Agent(model=ScriptedModel(["The orders table has 400 rows."]), tools=[execute_sql],
              middleware=[HumanInTheLoop(interrupt_on={"execute_sql": True})],
              checkpointer=SqliteCheckpointer("interlock.db"))
''',
}


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


PLACEHOLDER = re.compile(r"\{(pg|pg-dsn|pg-schema|pg-db|port|token|openai-url|anthropic-url|"
                         r"hook-port|event)\}")


def fill(text: str, ctx: Ctx) -> str:
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


def _block_env(ctx: Ctx, env: dict[str, str]) -> None:
    for item in ctx.block.marker("env"):
        name, _, value = item.partition("=")
        env[name] = fill(value, ctx)


def source(block: Block, ctx: Ctx) -> str:
    code = block.code
    for item in block.marker("replace"):
        old, sep, new = item.partition(" ==>")
        assert sep, f"{block.id}: replace needs 'OLD ==> NEW'"
        assert old in code, f"{block.id}: {old!r} is not in the block"
        code = code.replace(old, fill(new.removeprefix(" "), ctx))
    return code


# -- setups --------------------------------------------------------------------------------------


def setup_demo_data(ctx: Ctx, env: dict[str, str]) -> None:
    """The demo's four paused runs in $HOME/.interlock/demo, in ./ops-demo and in
    ./interlock.db (copies); made in a process with the block's environment (its HOME holds
    the audit key the commands use)."""
    data = Path(env["HOME"]) / ".interlock" / "demo"
    subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        from pathlib import Path
        from interlock.demo import build_agent, prepare, queue_runs
        data = Path({str(data)!r})
        prepare(data)
        agent = build_agent(data)
        try:
            queue_runs(agent)
        finally:
            agent.close()
    """)], env=env, check=True, timeout=120)
    shutil.copy(data / "interlock.db", ctx.tmp / "interlock.db")
    shutil.copytree(data, ctx.tmp / "ops-demo")


MYAPP = '''
from interlock import Agent, HumanInTheLoop, ScriptedModel, SqliteCheckpointer, tool

@tool
def execute_sql(query: str) -> str:
    """Run a SQL statement against the orders database."""
    return f"ran {query}"

agent = Agent(model=ScriptedModel([{"name": "execute_sql",
                                    "args": {"query": "DELETE FROM records"}},
                                   "Old records deleted."]),
              tools=[execute_sql],
              middleware=[HumanInTheLoop(interrupt_on={"execute_sql": True})],
              checkpointer=SqliteCheckpointer("interlock.db"))
'''

# the LangGraph example's agent: one turn with two calls to review, then an answer
LANGGRAPH_APP = '''
from interlock import Agent, HumanInTheLoop, ScriptedModel, SqliteCheckpointer, tool
from interlock.messages import UserMessage

@tool
def execute_sql(query: str) -> str:
    """Run a SQL statement against the orders database."""
    return f"ran {query}"

def plan(messages):
    if isinstance(messages[-1], UserMessage):
        return ("Cleaning up.", [
            {"name": "execute_sql", "args": {"query": "DELETE FROM orders WHERE status = 'refunded'"}},
            {"name": "execute_sql", "args": {"query": "DELETE FROM orders WHERE status = 'open'"}}])
    return "Done."

agent = Agent(model=ScriptedModel(plan), tools=[execute_sql],
              middleware=[HumanInTheLoop(interrupt_on={"execute_sql": True})],
              checkpointer=SqliteCheckpointer("interlock.db"))
'''


def _write_myapp(ctx: Ctx, env: dict[str, str], module: str) -> None:
    tmp = ctx.tmp
    (tmp / "myapp").mkdir()
    (tmp / "myapp" / "__init__.py").write_text("")
    (tmp / "myapp" / "agents.py").write_text(module)
    env["PYTHONPATH"] = f"{tmp}{os.pathsep}{env['PYTHONPATH']}"


def setup_myapp(ctx: Ctx, env: dict[str, str]) -> None:
    """myapp/agents.py with the README's agent, one thread (t-42) waiting in interlock.db."""
    _write_myapp(ctx, env, MYAPP)
    subprocess.run([sys.executable, "-c", "from myapp.agents import agent; "
                    "agent.invoke('clean up', thread_id='t-42')"],
                   cwd=ctx.tmp, env=env, check=True, timeout=60)


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


TOKEN = "docs-test-token-0123456789"


def setup_tokens(ctx: Ctx, env: dict[str, str]) -> None:
    (ctx.tmp / "tokens.toml").write_text(
        f'[[reviewers]]\nid = "alice"\nroles = ["dba"]\ntoken = "{TOKEN}"\n')
    ctx.values["token"] = TOKEN


def _serve(ctx: Ctx, env: dict[str, str], *args: str) -> str:
    """`interlock serve ARGS` on a free port until the block is done; its base URL."""
    import httpx

    port = _free_port()
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "interlock"), "serve", *args, "--port", str(port)],
        cwd=ctx.tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ctx.cleanups.append(lambda: (proc.terminate(), proc.wait(timeout=30)))
    give_up = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2)
            break
        except httpx.TransportError:
            assert proc.poll() is None and time.monotonic() < give_up, "serve did not start"
            time.sleep(0.2)
    ctx.values["port"] = str(port)
    return f"http://127.0.0.1:{port}"


def setup_server(ctx: Ctx, env: dict[str, str]) -> None:
    """`interlock serve myapp.agents:agent` on a free port, for the curl examples."""
    setup_myapp(ctx, env)
    _serve(ctx, env, "myapp.agents:agent")


def setup_langgraph_server(ctx: Ctx, env: dict[str, str]) -> None:
    """`interlock serve ... --tokens tokens.toml --langgraph-api` with an agent whose first turn
    asks for two calls; afterwards the thread must have finished with the first call run and
    the second rejected."""
    import httpx

    _write_myapp(ctx, env, LANGGRAPH_APP)
    setup_tokens(ctx, env)
    url = _serve(ctx, env, "myapp.agents:agent", "--db", "sqlite:///interlock.db",
                 "--tokens", "tokens.toml", "--langgraph-api")
    auth = {"Authorization": f"Bearer {TOKEN}"}

    def check() -> None:
        [t] = httpx.get(f"{url}/api/threads", headers=auth, timeout=10).json()["threads"]
        detail = httpx.get(f"{url}/api/threads/{t['thread_id']}", headers=auth,
                           timeout=10).json()
        assert detail["status"] == "completed", detail
        results = [m["content"] for m in detail["messages"] if m["role"] == "tool"]
        assert results[0] == "ran DELETE FROM orders WHERE status = 'refunded'", results
        assert "not on Fridays" in results[1], results

    ctx.checks.append(check)


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
            if name in ctx.block.code.lower():
                assert server.requests, f"no request reached the local {name} server"

    ctx.checks.append(check)


def _outbox(db: Path) -> list[Any]:
    from interlock import SqliteCheckpointer

    async def go() -> list[Any]:
        store = SqliteCheckpointer(db)
        try:
            return list(await store.outbox_list())
        finally:
            await store.close()

    return asyncio.run(go())


def _notify(ctx: Ctx, env: dict[str, str], failing: bool) -> None:
    from notify.fakes import new_secret, webhook_receiver

    setup_myapp(ctx, env)
    secret = new_secret()
    receiving = webhook_receiver(secret, fail_first=10**6 if failing else 0)
    rx = receiving.__enter__()
    ctx.cleanups.append(lambda: receiving.__exit__(None, None, None))
    toml = f'[[webhooks]]\nname = "ops"\nurl = "{rx.url}"\nsecret = "{secret}"\n'
    if failing:
        toml += "\n[dispatch]\nmax_attempts = 1\n"
    (ctx.tmp / "notify.toml").write_text(toml)
    [event] = _outbox(ctx.tmp / "interlock.db")  # t-42's request.raised
    ctx.values["event"] = event.id
    if failing:
        def check() -> None:
            assert rx.received and not rx.accepted
            [now] = _outbox(ctx.tmp / "interlock.db")
            assert now.id == event.id and now.status == "pending"  # dead, then retried
        ctx.checks.append(check)
    else:
        ctx.ready = lambda: bool(rx.accepted)

        def delivered() -> None:
            [payload] = rx.accepted
            assert payload["type"] == "request.raised"
            assert payload["data"]["thread_id"] == "t-42"
        ctx.checks.append(delivered)


def setup_notify(ctx: Ctx, env: dict[str, str]) -> None:
    """Thread t-42 waiting in ./interlock.db, its request.raised event in the outbox (id
    {event}); ./notify.toml names a webhook: a Standard Webhooks receiver on 127.0.0.1
    (tests/notify/fakes.py) that verifies signatures and must have accepted the event."""
    _notify(ctx, env, failing=False)


def setup_notify_failing(ctx: Ctx, env: dict[str, str]) -> None:
    """As `notify`, with a receiver that answers every delivery with HTTP 500 and
    max_attempts = 1, so that one attempt makes the event dead; afterwards it must be pending
    again (retried)."""
    _notify(ctx, env, failing=True)


DOCS_WEBHOOK_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # notifications.md's example


def setup_webhook_sender(ctx: Ctx, env: dict[str, str]) -> None:
    """Once the block listens on {hook-port}: interlock's dispatcher delivers t-42's
    request.raised event to it (a webhook with the page's example secret), which must be
    accepted, then a forged request, which must be refused."""
    import httpx

    from interlock import SqliteCheckpointer
    from interlock.notify import Dispatcher, NotifyConfig, build_channels

    setup_myapp(ctx, env)
    assert DOCS_WEBHOOK_SECRET in ctx.block.code
    port = _free_port()
    ctx.values["hook-port"] = str(port)
    url = f"http://127.0.0.1:{port}/"
    outcome: dict[str, Any] = {}

    def deliver() -> None:
        give_up = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > give_up:
                    return
                time.sleep(0.1)
        config = NotifyConfig.model_validate(
            {"webhooks": [{"name": "docs", "url": url, "secret": DOCS_WEBHOOK_SECRET}]})

        async def once() -> None:
            store = SqliteCheckpointer(ctx.tmp / "interlock.db")
            try:
                dispatcher = Dispatcher(store, build_channels(config, store),
                                        settings=config.dispatch)
                await dispatcher.run_once()
                outcome["delivered"] = dispatcher.stats.delivered
            finally:
                await store.close()

        asyncio.run(once())
        forged = httpx.post(url, content=b'{"type": "request.raised", "data": {}}', headers={
            "content-type": "application/json", "webhook-id": "msg_forged",
            "webhook-timestamp": str(int(time.time())),
            "webhook-signature": "v1,Zm9yZ2VkIHNpZ25hdHVyZQ=="}, timeout=10)
        outcome["forged"] = forged.status_code

    sender = threading.Thread(target=deliver, daemon=True)
    sender.start()
    ctx.cleanups.append(lambda: sender.join(30))
    ctx.ready = lambda: "forged" in outcome

    def check() -> None:
        assert outcome == {"delivered": 1, "forged": 401}, outcome

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
    "demo-data": setup_demo_data, "myapp": setup_myapp, "checkout": setup_checkout,
    "this-checkout": setup_this_checkout, "venv": setup_venv, "tokens": setup_tokens,
    "server": setup_server, "langgraph-server": setup_langgraph_server,
    "local-models": setup_local_models, "notify": setup_notify,
    "notify-failing": setup_notify_failing, "webhook-sender": setup_webhook_sender,
    "pg-database": setup_pg_database,
}
# setups that stand in for something outside (a provider, a webhook endpoint, a container's
# database): a block using one says in a `note` marker what runs instead
STAND_INS = {"local-models", "notify", "notify-failing", "webhook-sender", "pg-database"}
MARKERS = {"prelude", "env", "replace", "background", "pty", "container", "note"}


# -- running -------------------------------------------------------------------------------------


def run_python(block: Block, ctx: Ctx, env: dict[str, str]) -> None:
    tmp = ctx.tmp
    code = "\n".join(PRELUDES[name] for name in block.marker("prelude") if name in PRELUDES) \
        + source(block, ctx)
    script = tmp / "block.py"
    script.write_text(code)
    [background] = block.marker("background") or [None]
    if background is not None:
        run_background(f"{shlex.quote(sys.executable)} {script}", background, tmp, env,
                       ctx.ready)
        return
    done = subprocess.run([sys.executable, str(script)], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{block.id}:\n{code}\n---\n{done.stderr[-4000:]}"


def commands(code: str) -> list[str]:
    """The block's commands (continuation lines joined, comments and blank lines dropped)."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [ln for ln in (line.strip() for line in joined.splitlines())
            if ln and not ln.startswith("#")]


def run_background(command: str, pattern: str, cwd: Path, env: dict[str, str],
                   ready: Callable[[], bool] | None = None) -> str:
    proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    seen: list[str] = []

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        give_up = time.monotonic() + 240
        while not (re.search(pattern, "".join(seen)) and (ready is None or ready())):
            if proc.poll() is not None:
                reader.join(5)
                if re.search(pattern, "".join(seen)) and (ready is None or ready()):
                    break
                pytest.fail(f"{command!r} exited ({proc.returncode}) before {pattern!r}:\n"
                            f"{''.join(seen)}")
            assert time.monotonic() < give_up, f"{command!r}: no {pattern!r} in:\n{seen}"
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return "".join(seen)


def run_pty(command: str, keys: str, cwd: Path, env: dict[str, str]) -> None:
    pexpect = pytest.importorskip("pexpect")
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


def run_bash(block: Block, ctx: Ctx, env: dict[str, str]) -> None:
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
    else:
        for command in commands(code):
            if command.startswith("export "):
                name, _, value = command.removeprefix("export ").partition("=")
                env[name] = value
            elif background is not None:
                run_background(command, background, cwd, env, ctx.ready)
            else:
                run_pty(command, keys or "", cwd, env)
    if container is not None:
        run_named_tests(block, container.split())


# blocks that take long: installs into fresh environments, clones, servers, nested test runs
SLOW_SETUPS = {"checkout", "venv", "server", "langgraph-server", "this-checkout"}


def _param(block: Block) -> object:
    slow = SLOW_SETUPS & set(block.marker("prelude")) or block.marker("background") \
        or block.marker("container")
    # installs, the benchmark and nested test runs take minutes on a loaded machine
    marks = [pytest.mark.slow, pytest.mark.first, pytest.mark.timeout(1800)] if slow else []
    return pytest.param(block, id=block.id, marks=marks)


@pytest.mark.parametrize("block", [_param(b) for b in ALL])
def test_doc_block_runs(block: Block, tmp_path: Path) -> None:
    ctx = Ctx(tmp_path, block)
    if any("{pg" in v and "{pg-db}" not in v for _, v in block.markers):
        ctx.values.update(pg_schema(ctx))
    try:
        env = _env(tmp_path)
        for name in block.marker("prelude"):
            if name in SETUPS:
                SETUPS[name](ctx, env)
        _block_env(ctx, env)
        if block.lang == "python":
            run_python(block, ctx, env)
        else:
            run_bash(block, ctx, env)
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
            assert name in SETUPS or name in PRELUDES, f"{b.id}: unknown prelude {name!r}"
        if kinds & {"container"} or STAND_INS & set(b.marker("prelude")):
            [note] = b.marker("note") or [""]
            assert len(note) > 40, f"{b.id}: say in a note what runs in place of what"
        if "container" in kinds:
            assert b.lang == "bash"
            assert any(c.startswith(CONTAINER_COMMAND) for c in commands(b.code))


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
    assert "PAUSED: the agent wants to call execute_sql" in first.stdout
    assert "(status: interrupted)" in first.stdout and "Run this script again" in first.stdout
    assert (work / "quickstart.db").exists()
    second = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")],
                            env=env, capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL)
    assert second.returncode == 0, second.stderr
    out = second.stdout
    assert "Found the paused run 'quickstart' (status: interrupted)" in out
    assert "tool result: 2 rows affected" in out
    assert "Done: the old records are deleted." in out
    assert "records left: 1" in out and "audit chain intact: True" in out
    assert not work.exists()  # cleaned up


def test_demo_banner_hints_match_the_docs_table() -> None:
    from interlock.cli.demo import HINTS

    table = {}
    for line in (ROOT / "docs" / "cli.md").read_text().splitlines():
        m = re.match(r"\| `([\w-]+)` \| .* \| ([^|]+) \|$", line)
        if m and m.group(1) in HINTS:
            table[m.group(1)] = m.group(2).strip()
    assert table == HINTS
