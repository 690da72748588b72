"""``interlock audit [verify|export-head]``: read, check and anchor the signed audit log."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import click

from .. import display
from .._sync import run_blocking
from ..agent import Agent
from ..audit.verify import AuditHead
from ..inputs import MAX_INDEX
from ..storage.base import AuditRecord
from ..subagent_tree import audit_with_subagents
from ._common import CliError, CliUsageError, dump_json, out, with_agent
from ._render import audit_table


def _all_records(agent: Agent, thread_id: str | None, keep: int | None,
                 subagents: bool = False) -> tuple[list[AuditRecord], int]:
    """The last ``keep`` rows (all if None) and the total number of rows; ``subagents``: with
    the rows of the thread's sub-agents' threads."""
    rows: deque[AuditRecord] = deque(maxlen=keep)
    total = 0
    after = 0
    while True:
        if subagents and thread_id is not None:
            batch = run_blocking(audit_with_subagents(agent, thread_id, after_id=after,
                                                      limit=1000), "audit")
        else:
            batch = agent.audit(thread_id, after_id=after, limit=1000)
        rows.extend(batch)
        total += len(batch)
        if len(batch) < 1000:
            return list(rows), total
        after = batch[-1].id or after


@click.command("audit")
@click.argument("action", required=False, type=click.Choice(["verify", "export-head"]),
                metavar="[verify|export-head]")
@click.option("--thread", "thread_id", metavar="THREAD", help="Only this thread's records.")
@click.option("--limit", type=click.IntRange(1, MAX_INDEX), default=200, show_default=True,
              metavar="N",
              help="Show the most recent N records.")
@click.option("--json", "as_json", is_flag=True, help="Print the records as JSON.")
@click.option("--subagents", is_flag=True,
              help="With --thread: also the records of the threads of its sub-agents "
                   "(Agent.as_tool), at any depth, in order.")
@click.option("--head", "head_file", type=click.Path(dir_okay=False, path_type=Path),
              metavar="FILE", help="verify: also check the log against a head exported earlier.")
@click.option("--allow-unsigned", is_flag=True,
              help="verify: accept unsigned rows of a database written before audit rows were "
                   "signed.")
@with_agent()
def audit(agent: Agent, action: str | None, thread_id: str | None, limit: int,
          as_json: bool, subagents: bool, head_file: Path | None,
          allow_unsigned: bool) -> None:
    """Show the audit log, check it with `verify`, or sign its head with `export-head`.

    Every request, decision (who, when, the proposed call and the exact call that runs),
    auto-approval, expiry and tool execution is recorded. Records are hash-chained per thread
    and signed with the audit key (INTERLOCK_AUDIT_KEY_FILE, default
    ~/.config/interlock/audit.key). `verify` recomputes the chains and checks the journal and
    the messages against them; it exits with status 1 if anything was changed, removed or
    reordered, and says what it could not check. `export-head` prints a signed summary of the
    log to keep elsewhere; `verify --head FILE` later shows whether anything it covers changed.

    Rows that link a thread and its sub-agents' threads (subagent_started, subagent_waiting,
    decision_routed, and a decision given on a parent: "given on thread ...") name the other
    thread; `--thread T --subagents` shows the rows of both, in order.

    \b
    Examples:
      interlock audit --db sqlite:///interlock.db
      interlock audit --db sqlite:///interlock.db --thread cleanup-cancelled-orders
      interlock audit --db sqlite:///interlock.db --thread o1 --subagents
      interlock audit verify --db sqlite:///interlock.db
      interlock audit export-head --db sqlite:///interlock.db > head-2026-11-30.json
      interlock audit verify --db sqlite:///interlock.db --head head-2026-11-30.json
    """
    if thread_id is not None:
        agent.get_thread(thread_id)  # ThreadNotFound for a typo
    console = out()
    if action == "export-head":
        click.echo(agent.export_audit_head().model_dump_json(indent=2))
        return
    if action == "verify":
        _verify(agent, thread_id, head_file, allow_unsigned)
        return
    if subagents and thread_id is None:
        raise CliUsageError("--subagents needs --thread THREAD: the sub-agents of which "
                            "thread?")
    records, total = _all_records(agent, thread_id, keep=limit, subagents=subagents)
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


def _verify(agent: Agent, thread_id: str | None, head_file: Path | None,
            allow_unsigned: bool) -> None:
    head = None
    if head_file is not None:
        try:
            raw = head_file.read_bytes()
        except OSError as exc:
            raise CliError(f"cannot read the exported head {head_file}: "
                           f"{exc.strerror or exc}.") from None
        try:
            head = AuditHead.model_validate_json(raw)
        except ValueError:
            raise CliError(
                f"{head_file} is not an exported audit head"
                f"{' (the file is empty)' if not raw.strip() else ''}: pass the file that "
                f"`interlock audit export-head --db URL > FILE` wrote, unchanged.") from None
    report = agent.verify_audit(thread_id, allow_unsigned=allow_unsigned, head=head)
    for note in report.unchecked:
        click.echo(f"  not checked: {display.one_line(str(note))}", err=True)
    if report:
        for p in report:
            click.echo(f"  {display.one_line(str(p))}", err=True)
        raise CliError(f"audit log verification failed: {len(report)} problem(s) in "
                       f"{report.rows} record(s).")
    scope = f"thread {display.one_line(thread_id)!r}" if thread_id else "all threads"
    against = f", matches the head exported at {head.created_at:%Y-%m-%d %H:%M:%S} UTC" \
        if head is not None else ""
    partly = " (partly: see 'not checked' above)" if report.unchecked else ""
    out().print(f"✔ audit log intact{partly}: {report.rows} record(s) checked ({scope})"
                f"{against}.", style="green", highlight=False, markup=False)
