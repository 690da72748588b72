"""``interlock audit [verify]``: read and check the hash-chained audit log."""

from __future__ import annotations

from collections import deque

import click

from ..agent import Agent
from ..storage.base import AuditRecord
from ._common import CliError, dump_json, out, with_agent
from ._render import audit_table


def _all_records(agent: Agent, thread_id: str | None, keep: int | None) -> tuple[
        list[AuditRecord], int]:
    """The last ``keep`` rows (all if None) and the total number of rows."""
    rows: deque[AuditRecord] = deque(maxlen=keep)
    total = 0
    after = 0
    while True:
        batch = agent.audit(thread_id, after_id=after, limit=1000)
        rows.extend(batch)
        total += len(batch)
        if len(batch) < 1000:
            return list(rows), total
        after = batch[-1].id or after


@click.command("audit")
@click.argument("action", required=False, type=click.Choice(["verify"]), metavar="[verify]")
@click.option("--thread", "thread_id", metavar="THREAD", help="Only this thread's records.")
@click.option("--limit", type=click.IntRange(min=1), default=200, show_default=True, metavar="N",
              help="Show the most recent N records.")
@click.option("--json", "as_json", is_flag=True, help="Print the records as JSON.")
@with_agent()
def audit(agent: Agent, action: str | None, thread_id: str | None, limit: int,
          as_json: bool) -> None:
    """Show the audit log, or check it with `verify`.

    Every request, decision (who, when, original and edited arguments), auto-approval,
    expiry and tool execution is recorded. Records are hash-chained per thread; `verify`
    recomputes the chains and exits with status 1 if any record was changed, removed or
    reordered.

    \b
    Examples:
      interlock audit --db sqlite:///interlock.db
      interlock audit --db sqlite:///interlock.db --thread cleanup-cancelled-orders
      interlock audit verify --db sqlite:///interlock.db
    """
    if thread_id is not None:
        agent.get_thread(thread_id)  # ThreadNotFound for a typo
    console = out()
    if action == "verify":
        problems = agent.verify_audit(thread_id)
        _, total = _all_records(agent, thread_id, keep=0)
        if problems:
            for p in problems:
                click.echo(f"  {p}", err=True)
            raise CliError(f"audit log verification failed: {len(problems)} problem(s) in "
                           f"{total} record(s).")
        scope = f"thread {thread_id!r}" if thread_id else "all threads"
        console.print(f"✔ audit log intact: {total} record(s) checked ({scope}).",
                      style="green", highlight=False, markup=False)
        return
    records, total = _all_records(agent, thread_id, keep=limit)
    if as_json:
        dump_json([r.model_dump(mode="json") for r in records])
        return
    if not records:
        console.print("The audit log is empty.")
        return
    console.print(audit_table(records, console.width))
    if total > len(records):
        console.print(f"showing the last {len(records)} of {total} records (--limit)",
                      style="dim")
