"""``interlock dispatch`` and ``interlock outbox``: deliver notifications, see and retry them."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .._sync import run_blocking
from ..agent import Agent
from ..errors import ConfigurationError, MissingDependency
from ..inputs import MAX_INDEX
from ..outbox import OutboxEvent

if TYPE_CHECKING:
    from ..notify import NotifyConfig
from ._common import CliError, dump_json, out, short, stop_on_signals, when, with_agent


def _load(notify_file: Path) -> NotifyConfig:
    from ..notify import load_config

    try:
        return load_config(notify_file)
    except ConfigurationError as exc:
        raise CliError(str(exc), exit_code=2) from exc


@click.command("dispatch")
@click.option("--notify", "notify_file", metavar="FILE", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Notification configuration (TOML; see docs/notifications.md).")
@click.option("--once", is_flag=True, help="Deliver what is due now, then exit.")
@with_agent()
def dispatch(agent: Agent, notify_file: Path, once: bool) -> None:
    """Deliver outbox notifications (webhooks, Slack, e-mail) until stopped with Ctrl-C.

    `interlock serve --notify FILE` does this too; run this instead (or as well: dispatchers
    share the work safely) for a separate delivery process.

    \b
    Example:
      interlock dispatch --db sqlite:///interlock.db --notify notify.toml
    """
    from ..notify import Dispatcher, build_channels

    config = _load(notify_file)
    store = agent.checkpointer
    try:
        dispatcher = Dispatcher(store, build_channels(config, store), settings=config.dispatch)
    except MissingDependency as exc:
        raise CliError(str(exc)) from exc
    console = out()

    async def main() -> None:
        if once:
            await dispatcher.run_once()
            return
        stop = stop_on_signals()
        console.print(f"interlock: delivering notifications to "
                      f"{', '.join(c.name for c in dispatcher.channels) or 'no channel'}; "
                      f"Ctrl-C stops", highlight=False, markup=False)
        await dispatcher.run(stop)

    asyncio.run(main())
    s = dispatcher.stats
    console.print(f"attempts {s.attempts}, delivered {s.delivered}, failed {s.failed}, "
                  f"dead {s.dead}", highlight=False, markup=False)


def _row(e: OutboxEvent) -> str:
    parts = []
    errors = []
    for name, d in (e.deliveries or {}).items():
        failed = bool(d.last_error) and d.status != "delivered"
        parts.append(f"{name}={d.status}/{d.attempts}" + (" (error below)" if failed else ""))
        if failed:
            # whole, on a line of its own: a cut error often cuts the URL that failed
            errors.append(f"    {name}: {short(d.last_error or '', 2000)}")
    return "\n".join([f"{e.id}  {e.status:9}  {e.type:27}  {short(e.thread_id, 24):24}  "
                      f"{when(e.created_at)}  {'; '.join(parts) or 'not handled yet'}",
                      *errors])


@click.command("outbox")
@click.argument("action", required=False, type=click.Choice(["retry", "prune"]),
                metavar="[retry|prune]")
@click.argument("event_ids", nargs=-1, metavar="[EVENT_ID...]")
@click.option("--status", type=click.Choice(["pending", "delivered", "dead"]),
              help="Only events with this status.")
@click.option("--thread", "thread_id", metavar="THREAD", help="Only this thread's events.")
@click.option("--limit", type=click.IntRange(1, MAX_INDEX), default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the events as JSON.")
@click.option("--older-than", "older_than", type=click.FloatRange(min=0), default=30.0,
              show_default=True, metavar="DAYS",
              help="prune: delete events created more than DAYS ago (delivered ones, or those "
              "of --status).")
@with_agent()
def outbox(agent: Agent, action: str | None, event_ids: tuple[str, ...], status: str | None,
           thread_id: str | None, limit: int, as_json: bool, older_than: float) -> None:
    """List notification events and their deliveries, `retry` dead ones, or `prune` old ones.

    \b
    Examples:
      interlock outbox --db sqlite:///interlock.db --status dead
      interlock outbox retry evt_3f2a... --db sqlite:///interlock.db
      interlock outbox prune --older-than 30 --db sqlite:///interlock.db
    """
    from ..notify import retry_event

    store = agent.checkpointer
    console = out()
    if action == "prune":
        before = datetime.now(UTC) - timedelta(days=older_than)
        gone = run_blocking(store.outbox_prune(before=before, statuses=(status or "delivered",)),
                            "outbox prune")
        console.print(f"deleted {gone} {status or 'delivered'} event(s) created before "
                      f"{before:%Y-%m-%d %H:%M} UTC", highlight=False, markup=False)
        return
    if action == "retry":
        if not event_ids:
            raise CliError("outbox retry needs the id(s) of dead events (see --status dead).",
                           exit_code=2)
        for eid in event_ids:
            if run_blocking(retry_event(store, eid), "outbox retry") is None:
                raise CliError(f"there is no dead outbox event {eid!r} (list them with "
                               f"`interlock outbox --status dead`).")
            console.print(f"{eid}: due again; a running dispatcher delivers it shortly",
                          highlight=False, markup=False)
        return
    events = run_blocking(store.outbox_list(status=status, thread_id=thread_id, limit=limit),
                          "outbox")
    if as_json:
        dump_json([e.model_dump(mode="json") for e in events])
        return
    if not events:
        console.print("No outbox events" + (f" with status {status}." if status else "."))
        return
    for e in events:
        console.print(_row(e), highlight=False, markup=False, overflow="fold")
