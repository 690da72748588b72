"""``interlock demo``: the sample operations agent, its requests waiting in the web inbox."""

from __future__ import annotations

import getpass
import os
import shlex
import socket
import sys
import threading
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..demo import DATA_DIR_ENV, MODEL_ENV, build_agent, claim, default_data_dir, prepare
from ..demo.model import SCENARIOS
from ..errors import MissingDependency
from ..result import RunResult
from ..review_request import read_request
from ._common import CliError, listen, out

HINTS = {
    # the same words as the "try" column of the table in docs/cli.md (a test compares them)
    "cleanup-cancelled-orders": "approve (the rows go) or reject",
    "late-order-1042": "edit the subject or body, then approve",
    "goodwill-credit": "respond 25; an UPDATE customers ... for the DBA follows",
    "weekly-report": "approve and remember: the finance e-mail goes out without asking",
}


def _waiting_on(result: RunResult) -> str:
    if result.status == "completed":
        return "completed without needing a person"
    names: list[str] = []
    for intr in result.interrupts:
        if intr.kind == "review":
            names.extend(read_request(intr.value).tool_names())
        else:
            names.append("an answer")
    return "waits for: " + ", ".join(names)


def _command() -> str:
    """How to run this interlock from another terminal window: the ``interlock`` script of the
    environment running now, by its full path (a new window has not activated the virtual
    environment, so a bare ``interlock`` is often "command not found"), else this Python with
    ``-m interlock.cli``."""
    script = Path(sys.executable).parent / "interlock"
    if script.is_file() and os.access(script, os.X_OK):
        return shlex.quote(str(script))
    return f"{shlex.quote(sys.executable)} -m interlock.cli"


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "your-name"


def _graphical_browser() -> bool:
    """Whether opening a browser would show a window (and not take over this terminal with a
    text browser)."""
    if sys.platform == "darwin" or os.name == "nt":
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _shell_env(data_dir: Path, model: str | None) -> str:
    env = []
    if data_dir != default_data_dir().resolve():
        env.append(f"{DATA_DIR_ENV}={shlex.quote(str(data_dir))}")
    if model:
        env.append(f"{MODEL_ENV}={shlex.quote(model)}")
    return " ".join(env) + (" " if env else "")


def _call_when_started(server: Any, on_ready: Callable[[], None]) -> None:
    """Call ``on_ready`` once uvicorn listens (and not at all if its startup fails)."""
    startup = server.startup

    async def started(sockets: list[socket.socket] | None = None) -> None:
        await startup(sockets=sockets)
        if not server.should_exit:
            on_ready()

    server.startup = started


@click.command("demo", short_help="Run the sample operations agent with the web inbox.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="Port on 127.0.0.1 for the inbox; 0 picks a free one.")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help=f"Where the demo keeps its databases (default: ${DATA_DIR_ENV} or "
              f"~/.interlock/demo). Its demo databases are replaced on every start.")
@click.option("--model", metavar="PROVIDER:NAME", default=None,
              help="Use a real model, e.g. openai:gpt-4.1-mini (OPENAI_API_KEY, "
              "OPENAI_BASE_URL) or anthropic:claude-sonnet-4-6 (ANTHROPIC_API_KEY). Default: "
              "the scripted demo model, no key needed.")
@click.option("--no-browser", is_flag=True, help="Do not open the inbox in a browser.")
def demo(port: int, data_dir: Path | None, model: str | None, no_browser: bool) -> None:
    """Run a sample operations agent and review its requests in the web inbox.

    Creates a fresh sample shop database (customers, orders, an e-mail outbox), starts a few
    agent runs that pause on dangerous calls — a DELETE, an e-mail, a question for you, an
    UPDATE — and serves the inbox on http://127.0.0.1:PORT/ until Ctrl-C. Decide there, with
    `interlock review` in another terminal, or through the HTTP API.

    \b
    Examples:
      interlock demo
      interlock demo --port 0 --no-browser --data-dir /tmp/interlock-demo
      OPENAI_API_KEY=... interlock demo --model openai:gpt-4.1-mini
    """
    try:
        from ..server import build_server
    except MissingDependency as exc:
        raise CliError(str(exc)) from exc
    console = out()
    data = (data_dir or default_data_dir()).expanduser().resolve()
    with claim(data):  # a second demo on this directory is refused, not allowed to wipe it
        _serve(console, data, port, model, no_browser, build_server)


def _serve(console: Console, data: Path, port: int, model: str | None, no_browser: bool,
           build_server: Callable[..., Any]) -> None:
    sock = listen("127.0.0.1", port)
    try:
        with console.status("Creating the sample shop database…"):
            sample = prepare(data)
        agent = build_agent(data, model=model)
        console.print(Text.assemble(("interlock demo", "bold"),
                                    (f" · data in {data} · model: ", ""),
                                    (model or "scripted (no API key needed)", "cyan")))
        results: list[RunResult] = []
        with console.status("Starting the agent runs…") as status:
            for thread_id, prompt in SCENARIOS:
                status.update(f"Starting {thread_id}…")
                results.append(agent.invoke(prompt, thread_id=thread_id))
        server = build_server(agent, host="127.0.0.1", port=sock.getsockname()[1],
                              log_level="warning", access_log=False)
    except BaseException:
        sock.close()
        raise
    bound = sock.getsockname()[1]
    url = f"http://127.0.0.1:{bound}/"
    db_url = shlex.quote(f"sqlite:///{data / 'interlock.db'}")
    env = _shell_env(data, model)
    cli = _command()

    def ready() -> None:
        click.echo(f"interlock demo: inbox at {url}")
        runs = Table.grid(padding=(0, 1))
        runs.add_column(width=2)
        runs.add_column()
        for r in results:
            runs.add_row("•", Text.assemble((r.thread_id, "bold"), f"  {_waiting_on(r)}",
                                            (f"\n{HINTS[r.thread_id]}"
                                             if model is None and r.thread_id in HINTS
                                             else "", "dim")))
        console.rule("What to try", style="cyan")
        console.print(Text.assemble("Open ", (url, "bold cyan"), " — these runs wait for you:"))
        console.print(runs)
        console.print()
        console.print("Or decide in a terminal (another window; the command's full path, so "
                      "it works there without activating the virtual environment):")
        for line in [f"  {env}{cli} review --agent interlock.demo:agent "
                     f"--reviewer {shlex.quote(_user())}"]:
            console.print(Text(line, style="bold"), soft_wrap=True)
        console.print()
        console.print("See what happened:")
        for line in [f"  {cli} threads --db {db_url}",
                     f"  {cli} show cleanup-cancelled-orders --db {db_url}",
                     f"  {cli} audit verify --db {db_url}",
                     f"  sqlite3 {shlex.quote(str(sample))} "
                     f"'SELECT id, to_addr, subject FROM outbox'"]:
            console.print(Text(line), soft_wrap=True)
        console.print()
        console.print("Ctrl-C stops the demo.", style="dim")
        console.file.flush()
        if not no_browser:
            if _graphical_browser():
                threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
            else:
                console.print("(no graphical display found: open the URL in your browser)",
                              style="dim")

    _call_when_started(server, ready)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
        agent.close()
    console.print(f"Demo stopped. Its data stays in {data} until the next `interlock demo`.",
                  style="dim", highlight=False, markup=False)
