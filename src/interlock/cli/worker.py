"""``interlock worker MODULE:agent``: run what API-only servers queue (Postgres)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import click

from ..authz import read_keys
from ..errors import ConfigurationError
from ..storage import from_url
from ..storage.postgres_conn import redact_url
from ..subagent_tree import use_store
from ._common import (
    DB_ENV,
    CliError,
    CliUsageError,
    check_reachable,
    load_agent,
    log_to_stderr,
    stop_on_signals,
)
from ._observe import install_observer, observability_options, start_metrics


@click.command("worker")
@click.argument("agent_spec", metavar="MODULE:AGENT")
@click.option("--db", "db", metavar="URL", envvar=DB_ENV,
              help="The database the API servers use, replacing the agent's own store: "
              "postgresql://user@host/db (env: INTERLOCK_DB).")
@click.option("--concurrency", default=8, show_default=True, type=click.IntRange(min=1),
              help="Runs this process works on at once.")
@click.option("--claim-lease", default=30.0, show_default=True,
              type=click.FloatRange(min=0.1),
              help="Seconds a claimed run stays this worker's without renewal (renewed while "
              "it runs); a killed worker's runs are taken over this long after.")
@click.option("--poll-interval", default=5.0, show_default=True,
              type=click.FloatRange(min=0.05),
              help="Seconds between queue reads when no signal arrives (queued runs wake the "
              "workers at once through LISTEN/NOTIFY).")
@click.option("--recovery-interval", default=30.0, show_default=True,
              type=click.FloatRange(min=0),
              help="Seconds between sweeps that continue threads whose process stopped "
              "mid-run; 0 disables them.")
@click.option("--expiry-interval", default=30.0, show_default=True,
              type=click.FloatRange(min=0),
              help="Seconds between checks of review deadlines; 0 disables them.")
@click.option("--shutdown-grace", default=5.0, show_default=True,
              type=click.FloatRange(min=0),
              help="Seconds runs still going get to finish when the worker is stopped "
              "(Ctrl-C / SIGTERM); then they are cancelled: a tool still running is waited "
              "for up to the agent's tool_grace and its outcome stored, and the run goes back "
              "to the queue.")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
@observability_options
def worker(agent_spec: str, db: str | None, concurrency: int, claim_lease: float,
           poll_interval: float, recovery_interval: float, expiry_interval: float,
           shutdown_grace: float, log_level: str, log_format: str, otel: bool,
           metrics_port: int | None, metrics_host: str) -> None:
    """Run the agent's queued runs until stopped (Ctrl-C / SIGTERM): the run tier behind
    `interlock serve --api-only`. Load the same MODULE:AGENT as the servers.

    \b
    Example:
      interlock serve myapp.agents:agent --db postgresql://app@db/agents --api-only
      interlock worker myapp.agents:agent --db postgresql://app@db/agents
    """
    from ..worker import Worker

    agent = load_agent(agent_spec)
    if db is not None:
        try:
            store = from_url(db, read_keys=read_keys)
        except ConfigurationError as exc:
            raise CliUsageError(f"--db {redact_url(db)!r}: {exc}") from exc
        use_store(agent, store)  # its sub-agents' threads go there too, as in serve --db
    observer = install_observer(agent, otel=otel, metrics_port=metrics_port,
                                log_format=log_format, worker=True)
    try:
        w = Worker(agent, concurrency=concurrency, claim_lease=timedelta(seconds=claim_lease),
                   poll_interval=poll_interval,
                   recovery_interval=timedelta(seconds=recovery_interval)
                   if recovery_interval else None,
                   expiry_interval=timedelta(seconds=expiry_interval)
                   if expiry_interval else None, shutdown_grace=shutdown_grace)
    except ConfigurationError as exc:
        raise CliError(f"interlock worker needs the run queue of a Postgres database: {exc}",
                       exit_code=2) from exc
    check_reachable(agent.checkpointer, "worker")
    # from here on: records of the agent's import (e.g. "no checkpointer given") would name a
    # store that --db has replaced since
    log_to_stderr(log_level, log_format)

    async def main() -> None:
        stop = stop_on_signals()
        try:
            metrics = await start_metrics(observer, agent, metrics_host, metrics_port)
        except OSError as exc:
            raise CliError(f"--metrics-port {metrics_port}: {exc}", exit_code=2) from exc
        click.echo(f"interlock: worker for {agent.name!r} on {agent.checkpointer!r}, "
                   f"{concurrency} run(s) at a time; Ctrl-C stops", err=True)
        try:
            await w.run(stop)
        finally:
            if metrics is not None:
                metrics.close()
            await agent.aclose()

    asyncio.run(main())
    s = w.stats
    click.echo(f"interlock: worker stopped: claimed {s.claimed}, finished {s.finished}, "
               f"failed {s.failed}, given back {s.busy}", err=True)
