"""Every Python block and shell command in README.md and docs/*.md runs, as written.

A block that needs something around it says so in marker comments right above its fence (HTML
comments, invisible on the rendered page)::

    <!-- docs-test: prelude tools -->           Python: run PRELUDES["tools"] first
                                                shell: run SETUPS["demo-data"] first
    <!-- docs-test: env NAME=VALUE -->          set an environment variable
    <!-- docs-test: replace OLD ==> NEW -->     fill a placeholder ({root}, {tmp}, {port}, {pg})
    <!-- docs-test: background PATTERN -->      shell: every command is a server; it must print
                                                PATTERN, then it is stopped with Ctrl-C
    <!-- docs-test: pty KEYS -->                shell: every command runs in a terminal and
                                                gets KEYS (an interactive command)
    <!-- docs-test: skip REASON -->             not run here; REASON names what covers it

Python blocks run in a fresh directory in a new interpreter; shell blocks with ``bash -e`` in a
fresh directory, ``interlock`` and ``python`` from this environment on the PATH.
"""

from __future__ import annotations

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
    values: dict[str, str] = field(default_factory=dict)
    cleanups: list[Callable[[], None]] = field(default_factory=list)


def fill(text: str, ctx: Ctx) -> str:
    values = {"root": str(ROOT), "tmp": str(ctx.tmp), "python": sys.executable, **ctx.values}
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    assert not re.search(r"\{(pg|pg-dsn|pg-schema|port)\}", text), f"unfilled: {text}"
    return text


def _env(tmp: Path, block: Block) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INTERLOCK_", "OPENAI_",
                                                                      "ANTHROPIC_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = str(ROOT / "src")
    env["HOME"] = str(tmp / "home")  # the demo's default data directory goes here
    env["PIP_NO_COMPILE"] = "1"  # installs as written, without byte-compiling (time)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    (tmp / "home").mkdir(exist_ok=True)
    for item in block.marker("env"):
        name, _, value = item.partition("=")
        env[name] = value
    return env


def source(block: Block, ctx: Ctx) -> str:
    code = block.code
    for item in block.marker("replace"):
        old, sep, new = item.partition(" ==> ")
        assert sep, f"{block.id}: replace needs 'OLD ==> NEW'"
        assert old in code, f"{block.id}: {old!r} is not in the block"
        code = code.replace(old, fill(new, ctx))
    return code


# -- setups for shell blocks ---------------------------------------------------------------------


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


def setup_myapp(ctx: Ctx, env: dict[str, str]) -> None:
    """myapp/agents.py with the README's agent, one thread waiting in interlock.db."""
    tmp = ctx.tmp
    (tmp / "myapp").mkdir()
    (tmp / "myapp" / "__init__.py").write_text("")
    (tmp / "myapp" / "agents.py").write_text(textwrap.dedent('''
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
    '''))
    subprocess.run([sys.executable, "-c", "from myapp.agents import agent; "
                    "agent.invoke('clean up', thread_id='t-42')"],
                   cwd=tmp, env={**env, "PYTHONPATH": f"{tmp}{os.pathsep}{env['PYTHONPATH']}"},
                   check=True, timeout=60)
    env["PYTHONPATH"] = f"{tmp}{os.pathsep}{env['PYTHONPATH']}"


def setup_checkout(ctx: Ctx, env: dict[str, str]) -> None:
    """A clone of this repository (its committed state) as the working directory; nothing of
    this environment on the import path."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(ctx.tmp / "checkout")], check=True,
                   timeout=120)
    ctx.values["cwd"] = str(ctx.tmp / "checkout")
    env.pop("PYTHONPATH", None)


def setup_venv(ctx: Ctx, env: dict[str, str]) -> None:
    """A fresh virtual environment, active (first on the PATH): installs go there."""
    venv = ctx.tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    env["VIRTUAL_ENV"] = str(venv)
    env.pop("PYTHONPATH", None)


def setup_tokens(ctx: Ctx, env: dict[str, str]) -> None:
    (ctx.tmp / "tokens.toml").write_text(
        '[[reviewers]]\nid = "alice"\nroles = ["dba"]\ntoken = "docs-test-token-0123456789"\n')


def setup_server(ctx: Ctx, env: dict[str, str]) -> None:
    """`interlock serve myapp.agents:agent` on a free port, for the curl examples."""
    setup_myapp(ctx, env)
    port = _free_port()
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "interlock"), "serve", "myapp.agents:agent",
         "--port", str(port)], cwd=ctx.tmp, env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    ctx.cleanups.append(lambda: (proc.terminate(), proc.wait(timeout=30)))
    import httpx

    give_up = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2)
            break
        except httpx.TransportError:
            assert proc.poll() is None and time.monotonic() < give_up, "serve did not start"
            time.sleep(0.2)
    ctx.values["port"] = str(port)


SETUPS: dict[str, Callable[[Ctx, dict[str, str]], None]] = {
    "demo-data": setup_demo_data, "myapp": setup_myapp, "checkout": setup_checkout,
    "venv": setup_venv, "tokens": setup_tokens, "server": setup_server,
}


# -- running -------------------------------------------------------------------------------------


def run_python(block: Block, ctx: Ctx) -> None:
    tmp = ctx.tmp
    code = "\n".join(PRELUDES[name] for name in block.marker("prelude")) + source(block, ctx)
    script = tmp / "block.py"
    script.write_text(code)
    [background] = block.marker("background") or [None]
    if background is not None:
        run_background(f"{shlex.quote(sys.executable)} {script}", background, tmp,
                       _env(tmp, block))
        return
    done = subprocess.run([sys.executable, str(script)], cwd=tmp, env=_env(tmp, block),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{block.id}:\n{code}\n---\n{done.stderr[-4000:]}"


def commands(code: str) -> list[str]:
    """The block's commands (continuation lines joined, comments and blank lines dropped)."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [ln for ln in (line.strip() for line in joined.splitlines())
            if ln and not ln.startswith("#")]


def run_background(command: str, pattern: str, cwd: Path, env: dict[str, str]) -> str:
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
        while not re.search(pattern, "".join(seen)):
            if proc.poll() is not None:
                reader.join(5)
                if re.search(pattern, "".join(seen)):
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


def run_bash(block: Block, ctx: Ctx) -> None:
    env = _env(ctx.tmp, block)
    for name in block.marker("prelude"):
        SETUPS[name](ctx, env)
    cwd = Path(ctx.values.get("cwd", ctx.tmp))
    code = source(block, ctx)
    [background] = block.marker("background") or [None]
    [keys] = block.marker("pty") or [None]
    if background is None and keys is None:
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", code], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{block.id}:\n{code}\n---\n{done.stdout[-2000:]}\n" \
                                     f"{done.stderr[-4000:]}"
        return
    for command in commands(code):
        if command.startswith("export "):
            name, _, value = command.removeprefix("export ").partition("=")
            env[name] = value
        elif background is not None:
            run_background(command, background, cwd, env)
        else:
            run_pty(command, keys or "", cwd, env)


def _param(block: Block) -> object:
    # installs into fresh environments, clones and servers take seconds each
    slow = {"checkout", "venv", "server"} & set(block.marker("prelude")) \
        or block.marker("background")
    return pytest.param(block, id=block.id, marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("block", [_param(b) for b in ALL])
def test_doc_block_runs(block: Block, tmp_path: Path) -> None:
    skip = block.marker("skip")
    if skip:
        assert len(skip[0]) > 20, f"{block.id}: say why the block is not run and what covers it"
        pytest.skip(f"{block.id}: {skip[0]}")
    ctx = Ctx(tmp_path)
    if any("{pg" in v for _, v in block.markers):
        ctx.values.update(pg_schema(ctx))
    try:
        if block.lang == "python":
            run_python(block, ctx)
        else:
            run_bash(block, ctx)
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


def test_blocks_not_run_are_few_and_say_why() -> None:
    skipped = {b.id: b.marker("skip")[0] for b in ALL if b.marker("skip")}
    assert len(skipped) <= 16, json.dumps(skipped, indent=2)
    assert len(ALL) >= 30  # the parser found the blocks


def test_readme_example_runs_twice_in_a_fresh_directory(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    [example] = [b for b in ALL if b.path.name == "README.md" and b.lang == "python"]
    assert example.code in readme
    script = tmp_path / "readme_example.py"
    script.write_text(example.code)
    outputs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path,
                              env=_env(tmp_path, example), capture_output=True, text=True,
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
    env = {**_env(tmp_path, Block(ROOT, 0, "bash", "")), "INTERLOCK_QUICKSTART_DIR": str(work)}
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
