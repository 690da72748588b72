"""Shared plumbing of the ``interlock`` commands: options, loading an agent, errors, output."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO, TypeVar

import click
from pydantic_core import to_jsonable_python
from rich.console import Console
from rich.segment import Segment

from .. import display
from .._sync import run_blocking
from ..agent import Agent
from ..authz import Reviewer, check_name, read_keys
from ..errors import (
    ConfigurationError,
    InterlockError,
    NotAuthorized,
    StorageError,
    in_other_terms,
)
from ..models.scripted import ScriptedModel
from ..storage import from_url
from ..storage.base import Checkpointer, ThreadRecord
from ..storage.postgres_conn import redact_url
from ..storage.sqlite import SqliteCheckpointer
from ..subagent_tree import use_store

F = TypeVar("F", bound=Callable[..., Any])

DB_ENV = "INTERLOCK_DB"
AGENT_ENV = "INTERLOCK_AGENT"
STATUSES = ("idle", "running", "interrupted", "completed", "failed")


# ---------------------------------------------------------------------------- errors


def _one_line(message: str) -> str:
    return " ".join(message.split())


class CliError(click.ClickException):
    """An error shown as one line, ``error: <message>``, with exit code 1."""

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(_one_line(message))
        if exit_code is not None:
            vars(self)["exit_code"] = exit_code  # ClickException declares it as a class var

    def show(self, file: Any = None) -> None:
        click.echo(click.style("error: ", fg="red", bold=True)
                   + display.one_line(self.format_message()), err=True)


class CliUsageError(CliError):
    """A usage error (unknown option, missing argument, bad value): exit code 2."""

    exit_code = 2


def usage_problem(error: click.UsageError) -> CliUsageError:
    hint = f" (see '{error.ctx.command_path} --help')" if error.ctx is not None else ""
    return CliUsageError(error.format_message() + hint)


class InterlockGroup(click.Group):
    """A click group whose errors are one line on stderr: ``error: ...``.

    interlock errors exit with 1, usage errors with 2.
    """

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as exc:
            raise usage_problem(exc) from exc

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CliError:
            raise
        except click.UsageError as exc:
            raise usage_problem(exc) from exc
        except InterlockError as exc:
            raise CliError(cli_message(exc)) from exc


_COMMANDS = (
    ("agent.recover(thread_id)", "`interlock recover THREAD` (with the same --agent and --db)"),
    ("agent.recover_stale()", "`interlock recover` (with the same --agent and --db)"),
)
"""Python advice in the library's messages, and the command that does the same."""


def cli_message(exc: InterlockError) -> str:
    """The library's message, with its Python advice (``agent.invoke(...)``) replaced by the
    commands that do the same from a shell."""
    text = _cli_terms(exc)
    for python, command in _COMMANDS:
        text = text.replace(python, command)
    return text


def _cli_terms(exc: InterlockError) -> str:
    return in_other_terms(
        exc,
        not_found="Thread {thread!r} does not exist in this store. List the threads with "
                  "`interlock threads` (same --db / --agent) and check the id and the store.",
        no_pending="Thread {thread!r} has no pending interrupt: nothing waits for a decision. "
                   "See its state with `interlock show {thread}`.",
        waiting="Thread {thread!r} is waiting for a decision. Decide it with "
                "`interlock review --thread {thread}` or close it with "
                "`interlock cancel {thread}`.")


# ---------------------------------------------------------------------------- output


class SafeConsole(Console):
    """A rich console that never writes a control, bidi or invisible character it did not
    produce itself: text is made visible by :mod:`interlock.display` where it is built, and
    anything that slipped through is escaped here, just before it is written."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            seg if seg.control else Segment(display.escape_hidden(seg.text), seg.style)
            for seg in buffer)


def out() -> Console:
    """A console on the current stdout (so test runners that swap streams see the output)."""
    return SafeConsole(file=sys.stdout, highlight=False, soft_wrap=False)


def dump_json(value: Any) -> None:
    click.echo(display.safe_json(to_jsonable_python(value)))


def when(ts: datetime | None) -> str:
    if ts is None:
        return "-"
    return ts.astimezone().strftime("%m-%d %H:%M:%S")


def short(text: str, width: int = 70) -> str:
    """``text`` on one line, made visible, cut to ``width`` (saying how much was left out)."""
    return display.one_line(text, width)


# ---------------------------------------------------------------------------- options


def db_option(f: F) -> F:
    return click.option(
        "--db", "db", metavar="URL", envvar=DB_ENV,
        help="Thread store: sqlite:///path.db, postgresql://user@host/db (env: INTERLOCK_DB). "
        "Defaults to the store of --agent.",
    )(f)


def agent_option(f: F) -> F:
    return click.option(
        "--agent", "agent_spec", metavar="MODULE:ATTR", envvar=AGENT_ENV,
        help="The agent: an Agent or a function returning one, as for `interlock serve` "
        "(env: INTERLOCK_AGENT), e.g. interlock.demo:agent. Its store is used unless --db "
        "is given.",
    )(f)


REVIEWER_ENV = "INTERLOCK_REVIEWER"


def reviewer_options(f: F) -> F:
    f = click.option(
        "--role", "roles", metavar="ROLE", multiple=True,
        help="A role the reviewer holds (repeatable), for requests limited to roles.",
    )(f)
    return click.option(
        "--reviewer", metavar="NAME", default=None, envvar=REVIEWER_ENV,
        help=f"Who decides, as written to the audit log (or set ${REVIEWER_ENV}). Required: "
        f"decisions are never recorded under a guessed name.",
    )(f)


def make_reviewer(name: str | None, roles: tuple[str, ...], *, command: str) -> Reviewer:
    """The reviewer given with ``--reviewer`` / ``$INTERLOCK_REVIEWER``; a usage error
    without one (the operating-system user is not a reviewer identity)."""
    if name is None or not name.strip():
        raise CliUsageError(
            f"{command} records who decides: pass --reviewer NAME (and --role ROLE for "
            f"role-limited requests) or set {REVIEWER_ENV}=NAME."
        )
    try:
        return Reviewer(check_name(name.strip()), frozenset(roles))
    except NotAuthorized as exc:
        raise CliError(str(exc)) from None


# ---------------------------------------------------------------------------- agents and stores


def open_store(url: str, *, reader: bool = False) -> Checkpointer:
    """Open an existing thread store; a SQLite file that does not exist is an error (a typo
    would otherwise create an empty database and show nothing), and so is, for a ``reader``
    (a command given no agent), a Postgres schema without interlock tables."""
    try:
        store = from_url(url, read_keys=read_keys)
    except ConfigurationError as exc:
        raise CliUsageError(f"--db {redact_url(url)!r}: {exc}") from exc
    if isinstance(store, SqliteCheckpointer) and store.path != ":memory:" \
            and not Path(store.path).is_file():
        raise CliError(
            f"--db {redact_url(url)!r}: the database file {store.path} does not exist. Check "
            f"the path (sqlite:///relative.db or sqlite:////absolute/path.db)."
        )
    stored_version = getattr(store, "stored_version", None)  # Postgres: is the schema there?
    if reader and callable(stored_version):
        try:
            found = stored_version()
        except StorageError as exc:
            raise CliError(f"--db {redact_url(url)!r}: {exc}") from exc
        if found == 0:
            schema = getattr(store, "schema", "public")
            raise CliError(
                f"--db {redact_url(url)!r}: the schema {schema!r} holds no interlock tables. "
                f"Check the schema name (?schema=NAME in the URL; the default is public); to "
                f"create the tables for a new store, run `interlock migrate --db URL`.")
    return store


def check_reachable(store: Checkpointer, command: str) -> None:
    """Fail at start, with the store's own message, when ``store`` cannot be read (a typo in
    --db, a database that is not running, a schema it cannot use): a long-running ``command``
    would otherwise start anyway and only log failed attempts. Outages after the start are
    retried by the command's background jobs."""
    try:
        run_blocking(store.changes(after=None), f"interlock {command}")
    except InterlockError as exc:
        raise CliError(f"interlock {command} cannot start: {exc}") from exc


class _StderrLog(logging.StreamHandler[TextIO]):
    """The handler :func:`log_to_stderr` adds (once per process)."""


def log_to_stderr(level: str, log_format: str = "text") -> None:
    """Show interlock's own log records of ``level`` and above on stderr, as
    ``LEVEL logger: message`` (``log_format="json"``: one JSON object per line, see
    :mod:`interlock.observe.logs`) (a long-running command's ``--log-level``; third-party
    loggers keep their own settings). Call it once the command is about to run: it changes the
    process's logging."""
    logger = logging.getLogger("interlock")
    if not any(isinstance(h, _StderrLog) for h in logger.handlers):
        handler = _StderrLog(sys.stderr)
        if log_format == "json":
            from ..observe.logs import JsonFormatter
            handler.setFormatter(JsonFormatter())
        else:
            handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level.upper())


def stop_on_signals() -> asyncio.Event:
    """An event that Ctrl-C (SIGINT) and SIGTERM set, for a long-running command's loop (call
    it inside the running loop; where signals cannot be caught this way, they stop the
    process as usual)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    return stop


def load_agent(spec: str) -> Agent:
    """Import ``MODULE:ATTR``; ATTR is an :class:`Agent` or a function returning one."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise CliUsageError(f"--agent {spec!r}: use MODULE:ATTR, e.g. myapp.agents:agent.")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except InterlockError:
        raise
    except ImportError as exc:
        raise CliError(f"--agent {spec!r}: cannot import {module_name!r}: {exc}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise CliError(f"--agent {spec!r}: {module_name!r} has no attribute {attr!r}.") \
                from None
    if not isinstance(obj, Agent) and callable(obj):
        obj = obj()
    if not isinstance(obj, Agent):
        raise CliError(
            f"--agent {spec!r} is a {type(obj).__name__}, not an interlock Agent (or a function "
            f"returning one)."
        )
    return obj


def _no_model(messages: Any) -> str:
    raise ConfigurationError(
        "This command was started without --agent, so it cannot call the model; pass --agent "
        "MODULE:ATTR to continue runs."
    )


def resolve_agent(
    db: str | None, agent_spec: str | None, *, purpose: str | None = None
) -> tuple[Agent, Checkpointer | None]:
    """The agent a command works with, and the store this command opened (to close).

    With ``--agent``: that agent (its checkpointer replaced by ``--db`` when given). With only
    ``--db``: a reader on that store, which can list, show, audit and cancel but not continue
    runs (``purpose`` set means the command needs the real agent, and says why).
    """
    if agent_spec:
        agent = load_agent(agent_spec)
        if not db:
            return agent, None
        store = open_store(db)
        use_store(agent, store)  # its sub-agents' threads go there too
        return agent, store
    if purpose is not None:
        raise CliUsageError(
            f"{purpose} needs the agent (its tools and model) to continue the runs after a "
            f"decision: pass --agent MODULE:ATTR or set {AGENT_ENV} (for the demo: --agent "
            f"interlock.demo:agent)."
        )
    if not db:
        raise CliUsageError(
            f"no thread store given: pass --db URL (or set {DB_ENV}), or --agent MODULE:ATTR."
        )
    store = open_store(db, reader=True)
    return Agent(model=ScriptedModel(_no_model), checkpointer=store, name="interlock-cli"), store


def with_agent(purpose: str | None = None) -> Callable[[F], F]:
    """Decorator: replace the ``db`` / ``agent_spec`` parameters by ``agent``; a store the
    command opened is closed when it ends (an agent loaded with --agent is left as it is)."""

    def deco(f: F) -> F:
        @functools.wraps(f)
        def wrapper(*args: Any, db: str | None, agent_spec: str | None, **kwargs: Any) -> Any:
            agent, opened = resolve_agent(db, agent_spec, purpose=purpose)
            try:
                return f(*args, agent=agent, **kwargs)
            finally:
                if opened is not None:
                    with contextlib.suppress(Exception):
                        run_blocking(opened.close(), "close")

        return agent_option(db_option(wrapper))  # type: ignore[return-value]

    return deco


def iter_threads(agent: Agent, status: str | None, page: int = 200) -> Iterator[ThreadRecord]:
    """Every thread with ``status`` (newest first), page by page."""
    return agent.iter_threads(status=status, page=page)


def listen(host: str, port: int) -> socket.socket:
    """A listening socket for the server on ``host:port``, bound here so that a port in use is
    one clear line and exit 1 (not the web server's log lines and its own exit code)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; check --host."
                       ) from exc
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose "
                       f"another port with --port (0 picks a free one).") from exc
    sock.set_inheritable(True)
    return sock
