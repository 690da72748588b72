"""``interlock serve MODULE:agent``: the HTTP API and the web inbox."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta
from pathlib import Path

import click

from ..errors import ConfigurationError, MissingDependency
from ._common import DB_ENV, CliError, check_reachable, listen, load_agent, log_to_stderr
from ._observe import install_observer, observability_options, start_metrics


@click.command("serve")
@click.argument("agent_spec", metavar="MODULE:AGENT")
@click.option("--db", "db", metavar="URL", envvar=DB_ENV,
              help="Thread store, replacing the agent's own: sqlite:///path.db or "
              "postgresql://user@host/db (env: INTERLOCK_DB).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but loopback needs reviewer tokens.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--tokens", "tokens_file", metavar="FILE",
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="TOML or JSON file mapping bearer tokens to reviewers and roles (default: "
              "env INTERLOCK_TOKENS / INTERLOCK_TOKENS_FILE; none = local mode).")
@click.option("--poll-interval", default=0.5, show_default=True, type=click.FloatRange(min=0.05),
              help="Seconds between store polls for the live inbox (changes from other "
              "processes appear within this time; on Postgres every commit wakes the inbox "
              "at once through LISTEN/NOTIFY, and polls are a fallback at least 5 s apart).")
@click.option("--expiry-interval", default=30.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds between checks of review deadlines; 0 disables the sweeper.")
@click.option("--recovery-interval", default=30.0, show_default=True,
              type=click.FloatRange(min=0),
              help="Seconds between sweeps that continue threads whose process stopped "
              "mid-run (one sweep always runs at start); 0: only at start.")
@click.option("--root-path", default="", metavar="PREFIX",
              help="URL prefix when a reverse proxy serves the inbox under a path, e.g. "
              "/interlock (the proxy strips it).")
@click.option("--notify", "notify_file", metavar="FILE",
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Notification configuration (webhooks, Slack, e-mail; TOML): delivers the "
              "outbox from this process and serves the Slack and e-mail decision routes.")
@click.option("--no-dispatch", is_flag=True,
              help="With --notify: serve the decision routes but leave delivery to a separate "
              "`interlock dispatch`.")
@click.option("--api-only", is_flag=True,
              help="Store input and decisions and answer, but run nothing here: runs go to "
              "`interlock worker` processes through the database's run queue (Postgres only). "
              "The workers also run the expiry and recovery sweeps.")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
@click.option("--langgraph-api", is_flag=True,
              help="Also serve the LangGraph-compatible API under /langgraph (langgraph-sdk "
              "clients; Agent Inbox under /langgraph/agent-inbox).")
@click.option("--langgraph-allow-origin", "langgraph_origins", multiple=True, metavar="ORIGIN",
              help="A browser origin allowed to call the LangGraph API, e.g. "
              "http://localhost:3000 where Agent Inbox runs (repeatable).")
@observability_options
def serve(agent_spec: str, db: str | None, host: str, port: int, tokens_file: Path | None,
          poll_interval: float, expiry_interval: float, recovery_interval: float,
          root_path: str, notify_file: Path | None, no_dispatch: bool, api_only: bool,
          log_level: str, langgraph_api: bool, langgraph_origins: tuple[str, ...],
          log_format: str, otel: bool, metrics_port: int | None, metrics_host: str) -> None:
    """Serve the review API and the web inbox for MODULE:AGENT (an Agent, or a function
    returning one), e.g. `interlock serve myapp.agents:agent --db sqlite:///interlock.db`.

    Threads whose process stopped mid-run (a crash, a killed server) are continued
    automatically, at start and every --recovery-interval seconds.

    With --api-only (Postgres) this process only stores input and decisions and answers;
    `interlock worker MODULE:AGENT` processes run the agent.

    Without tokens the server runs in local mode: it listens only on loopback and every
    decision is recorded as reviewer `local`.
    """
    try:
        from ..server.run import build_server
    except MissingDependency as exc:
        raise CliError(str(exc)) from exc
    if langgraph_origins and not langgraph_api:
        raise CliError("--langgraph-allow-origin needs --langgraph-api.", exit_code=2)
    agent = load_agent(agent_spec)
    observer = install_observer(agent, otel=otel, metrics_port=metrics_port,
                                log_format=log_format)
    metrics: list[asyncio.Task[asyncio.Server | None]] = []

    def started(url: str) -> None:
        _announce(url)
        if metrics_port is not None:  # in the server's event loop, next to the store
            task = asyncio.get_running_loop().create_task(
                start_metrics(observer, agent, metrics_host, metrics_port))
            task.add_done_callback(_metrics_failed)
            metrics.append(task)

    try:
        server = build_server(
            agent, host=host, port=port, db_url=db, tokens=tokens_file,
            poll_interval=poll_interval,
            expiry_interval=timedelta(seconds=expiry_interval) if expiry_interval else None,
            recovery_interval=timedelta(seconds=recovery_interval) if recovery_interval
            else None,
            log_level=log_level, on_started=started, root_path=root_path,
            notify=notify_file, dispatch=not no_dispatch,
            langgraph_api=langgraph_api, langgraph_origins=langgraph_origins,
            api_only=api_only,
        )
    except (ConfigurationError, MissingDependency) as exc:
        raise CliError(str(exc), exit_code=2 if isinstance(exc, ConfigurationError) else 1) \
            from exc
    check_reachable(agent.checkpointer, "serve")
    if port:
        # a port in use: one line, exit 1 (uvicorn binds it itself, and says where it runs)
        listen(host, port).close()
    log_to_stderr(log_level, log_format)  # interlock's own records too, not only uvicorn's
    if log_format == "json":
        from ..observe.logs import json_lines_for
        json_lines_for("uvicorn", "uvicorn.access")
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C after a clean shutdown: a normal stop
        server.run()


def _metrics_failed(task: asyncio.Task[asyncio.Server | None]) -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:
        logging.getLogger("interlock.metrics").error(
            "the metrics port could not be opened: %s (choose another --metrics-port)", exc)


def _announce(url: str) -> None:
    click.echo(f"interlock: review inbox at {url}  (API: {url}api, OpenAPI: "
               f"{url}api/openapi.json)", err=True)
